import { useEffect, useRef, useState } from "preact/hooks";
import { type Api, ApiError } from "../api.js";
import { formatNumber } from "../format.js";
import { type Polled, usePoll } from "../poll.js";
import { href } from "../router.js";
import type { BulkActionJson } from "../types.js";
import { Badge, Notice, Problem } from "./common.js";

/** How often a running operation is read: each batch takes at least 50 ms and pauses after, so a second shows steady movement. */
const RUNNING_REFRESH_MS = 1_000;

/** "Retry", "Set priority to 5", "Move to reports": an operation's action with its parameter. */
export function actionLabel(operation: Pick<BulkActionJson, "action" | "priority" | "queue">): string {
  switch (operation.action) {
    case "retry":
      return "Retry";
    case "cancel":
      return "Cancel";
    case "purge":
      return "Purge";
    case "set_priority":
      return operation.priority === null ? "Set priority" : `Set priority to ${operation.priority}`;
    case "move":
      return operation.queue === null ? "Move" : `Move to ${operation.queue}`;
  }
}

/** "120 of 300 jobs": how far an operation got; the total is what the filter covered when it started (an estimate on large tables). */
export function progressText(operation: BulkActionJson): string {
  const total = operation.total === null ? "an unknown number of" : formatNumber(operation.total);
  return `${formatNumber(operation.touched)} of ${total} jobs`;
}

/**
 * A progress bar: touched / total; without a value (moving) while the total
 * is unknown. A walk that finished is full whatever it touched: the total
 * counts jobs the action may find already done, or is an estimate.
 */
export function ProgressBar({ operation }: { operation: BulkActionJson }) {
  const label = `${actionLabel(operation)}: ${progressText(operation)}`;
  if (operation.status === "succeeded") return <progress class="bulk-bar" data-testid="bulk-progress-bar" aria-label={label} value={1} max={1} />;
  if (operation.total === null) {
    return operation.status === "running" ? <progress class="bulk-bar" data-testid="bulk-progress-bar" aria-label={label} /> : null;
  }
  // An estimated total can be passed: never more than full.
  const max = Math.max(operation.total, operation.touched, 1);
  return <progress class="bulk-bar" data-testid="bulk-progress-bar" aria-label={label} value={operation.touched} max={max} />;
}

/**
 * An operation, read every second until it ends. `onEnd` is called once,
 * when it is first seen ended (a page then refreshes what it touched).
 */
export function useBulkAction(api: Api, id: string, onEnd?: () => void): Polled<BulkActionJson> {
  const [ended, setEnded] = useState(false);
  const polled = usePoll(() => api.get<BulkActionJson>(`/v1/bulk-actions/${encodeURIComponent(id)}`), ended ? null : RUNNING_REFRESH_MS, [api, id]);
  const endSeen = useRef(false);
  const operation = polled.data;
  useEffect(() => {
    if (operation && operation.status !== "running" && !endSeen.current) {
      endSeen.current = true;
      setEnded(true);
      onEnd?.();
    }
  }, [operation, onEnd]);
  return polled;
}

/**
 * An operation's progress: its bar, status and counts, and a Cancel button
 * while it runs. With `onClose` it is shown inside another page, with a
 * link to its own.
 */
export function BulkProgress({ api, polled, onClose }: { api: Api; polled: Polled<BulkActionJson>; onClose?: () => void }) {
  const { data: operation, error, refresh } = polled;
  const [failure, setFailure] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const cancel = async () => {
    if (!operation) return;
    setBusy(true);
    setFailure(null);
    try {
      await api.post(`/v1/bulk-actions/${encodeURIComponent(operation.id)}/cancel`);
    } catch (problem) {
      setFailure(problem instanceof ApiError ? problem.message : String(problem));
    } finally {
      setBusy(false);
      await refresh();
    }
  };

  return (
    <section class="panel bulk-progress" data-testid="bulk-progress" data-status={operation?.status} aria-live="polite">
      <Problem error={error} />
      {failure ? <Notice kind="error">{failure}</Notice> : null}
      {operation ? (
        <>
          <div class="bulk-progress-head">
            <strong>{actionLabel(operation)}</strong> <Badge value={operation.status} />
            <span data-testid="bulk-progress-text">{progressText(operation)}</span>
          </div>
          <ProgressBar operation={operation} />
          {operation.status === "running" && operation.cancelRequested ? <p class="muted">Cancel requested: it stops after the batch in progress.</p> : null}
          {operation.status === "cancelled" ? <p class="muted">Cancelled: the jobs it touched stay changed.</p> : null}
          {operation.error ? <p class="error-text">{operation.error}</p> : null}
          <div class="actions">
            {operation.status === "running" && !operation.cancelRequested ? (
              <button type="button" class="danger" disabled={busy} onClick={cancel}>
                Cancel bulk action
              </button>
            ) : null}
            {onClose ? (
              <a class="button-link" href={href(`/bulk-actions/${operation.id}`)}>
                Details
              </a>
            ) : null}
            {onClose && operation.status !== "running" ? (
              <button type="button" class="secondary" onClick={onClose}>
                Close
              </button>
            ) : null}
          </div>
        </>
      ) : error ? null : (
        <p class="muted">Loading…</p>
      )}
    </section>
  );
}

/** An operation started from another page, followed there until it ends. */
export function FollowBulkAction({ api, id, onEnd, onClose }: { api: Api; id: string; onEnd: () => void; onClose: () => void }) {
  const polled = useBulkAction(api, id, onEnd);
  return <BulkProgress api={api} polled={polled} onClose={onClose} />;
}
