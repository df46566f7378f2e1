import { useCallback, useEffect, useRef, useState } from "preact/hooks";
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
 */
export function usePoll<T>(load: () => Promise<T>, intervalMs: number | null, deps: unknown[]): Polled<T> {
  const [state, setState] = useState<{ data: T | undefined; error: ApiError | null; updatedAt: Date | null }>({
    data: undefined,
    error: null,
    updatedAt: null,
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
        if (mine === generation.current) setState({ data, error: null, updatedAt: new Date() });
      } catch (error) {
        const apiError = error instanceof ApiError ? error : new ApiError(0, "CLIENT", String((error as Error)?.message ?? error));
        if (mine === generation.current) setState((previous) => ({ ...previous, error: apiError }));
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
    setState({ data: undefined, error: null, updatedAt: null });
    void run();
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, deps);

  useEffect(() => {
    if (intervalMs === null) return;
    const timer = setInterval(() => {
      if (document.visibilityState === "visible") void run();
    }, intervalMs);
    return () => clearInterval(timer);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [intervalMs, ...deps]);

  return { ...state, refresh: run };
}
