import { useCallback, useEffect, useLayoutEffect, useRef, useState } from "preact/hooks";
import { ApiError } from "./api.js";

export interface Polled<T> {
  data: T | undefined;
  error: ApiError | null;
  /** When the last successful load finished. */
  updatedAt: Date | null;
  /** Load again now (after an action). */
  refresh: () => Promise<void>;
}

/**
 * Load now, then every `intervalMs` while the tab is visible (null: only
 * when `refresh` is called); reload at once when `deps` change. A load never
 * overlaps the previous one, and answers to an outdated request (deps
 * changed meanwhile) are dropped. A changed `intervalMs` only restarts the
 * timer: the data stays.
 *
 * Test signal, always on: once a load's answer (or error) is rendered, the
 * poll raises `data-refreshes-<name>` on `<html>` (rounds completed under
 * that name in this document; a dropped answer does not count), and while
 * its timer runs `data-refresh-ms-<name>` holds the period. Browser tests
 * wait on these (`refreshes` in test/helpers/browser.ts) instead of
 * sleeping to show that nothing happens across refreshes.
 */
export function usePoll<T>(load: () => Promise<T>, intervalMs: number | null, deps: unknown[], name: string): Polled<T> {
  const [state, setState] = useState<{ data: T | undefined; error: ApiError | null; updatedAt: Date | null; rounds: number }>({
    data: undefined,
    error: null,
    updatedAt: null,
    rounds: 0,
  });
  const generation = useRef(0);
  const inFlight = useRef<Promise<void> | null>(null);
  const loadRef = useRef(load);
  loadRef.current = load;

  const run = useCallback(async (): Promise<void> => {
    if (inFlight.current) return inFlight.current;
    const mine = generation.current;
    const attempt = (async () => {
      try {
        const data = await loadRef.current();
        if (mine === generation.current) setState((previous) => ({ data, error: null, updatedAt: new Date(), rounds: previous.rounds + 1 }));
      } catch (error) {
        const apiError = error instanceof ApiError ? error : new ApiError(0, "CLIENT", String((error as Error)?.message ?? error));
        if (mine === generation.current) setState((previous) => ({ ...previous, error: apiError, rounds: previous.rounds + 1 }));
      } finally {
        inFlight.current = null;
      }
    })();
    inFlight.current = attempt;
    return attempt;
  }, []);

  useEffect(() => {
    generation.current += 1;
    inFlight.current = null;
    setState((previous) => ({ data: undefined, error: null, updatedAt: null, rounds: previous.rounds }));
    void run();
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, deps);

  useLayoutEffect(() => {
    if (state.rounds === 0) return;
    const root = document.documentElement;
    root.setAttribute(`data-refreshes-${name}`, String(Number(root.getAttribute(`data-refreshes-${name}`) ?? 0) + 1));
  }, [state.rounds]);

  useEffect(() => {
    if (intervalMs === null) return;
    const timer = setInterval(() => {
      if (document.visibilityState === "visible") void run();
    }, intervalMs);
    document.documentElement.setAttribute(`data-refresh-ms-${name}`, String(intervalMs));
    return () => {
      clearInterval(timer);
      document.documentElement.removeAttribute(`data-refresh-ms-${name}`);
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [intervalMs, ...deps]);

  return { ...state, refresh: run };
}
