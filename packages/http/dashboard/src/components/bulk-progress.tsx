import { useEffect, useRef, useState } from "preact/hooks";
import { type Api, ApiError } from "../api.js";
import { formatNumber } from "../format.js";
import { type Polled, usePoll } from "../poll.js";
import { href } from "../router.js";
import { BULK_ACTION_STATES, type BulkActionJson } from "../types.js";
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

/** What an action did to a job, in the past tense: "retried", "moved". */
const DONE: Record<BulkActionJson["action"], string> = {
  retry: "retried",
  cancel: "cancelled",
  purge: "purged",
  set_priority: "given the priority",
  move: "moved",
};

/**
 * Why an ended operation touched fewer jobs than its total, or null when
 * there is nothing to explain. The total counts the jobs in the action's
 * states when it started; a job that left them before the walk reached it
 * (a worker ran it, another action or a caller changed it) is skipped, not
 * failed: "500 cancelled; the other 2,500 were no longer waiting, queued,
 * retrying or running when it reached them (…): nothing failed."
 */
export function restText(operation: BulkActionJson): string | null {
  if (operation.status === "running" || operation.total === null || operation.touched >= operation.total) return null;
  const rest = operation.total - operation.touched;
  const done = `${formatNumber(operation.touched)} ${DONE[operation.action]}`;
  if (operation.status === "succeeded") {
    return (
      `${done}; the other ${formatNumber(rest)} were no longer ${orList(BULK_ACTION_STATES[operation.action])} when it reached them ` +
      "(run by workers, or changed by other actions or callers meanwhile): nothing failed."
    );
  }
  if (operation.status === "cancelled") return `${done} before it was cancelled; the other ${formatNumber(rest)} were left as they were.`;
  return `${done} before it failed; the other ${formatNumber(rest)} were left as they were.`;
}

/** "a, b or c". */
function orList(items: readonly string[]): string {
  return items.length <= 1 ? items.join("") : `${items.slice(0, -1).join(", ")} or ${items.at(-1)}`;
}

/** The touched / total cell of the operations list: "120 / 120", or for a walk that ended short, what happened to the rest. */
export function touchedSummary(operation: BulkActionJson): string {
  const total = operation.total === null ? "" : ` / ${formatNumber(operation.total)}`;
  if (operation.status === "running" || operation.total === null || operation.touched >= operation.total) return `${formatNumber(operation.touched)}${total}`;
  const rest = formatNumber(operation.total - operation.touched);
  const done = `${formatNumber(operation.touched)} ${DONE[operation.action]}`;
  if (operation.status === "succeeded") return `${done}, ${rest} already moved on`;
  return `${done}, ${rest} left as they were`;
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
  const polled = usePoll(() => api.get<BulkActionJson>(`/v1/bulk-actions/${encodeURIComponent(id)}`), ended ? null : RUNNING_REFRESH_MS, [api, id], "bulk-action");
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
          {restText(operation) ? (
            <p class="muted" data-testid="bulk-rest">
              {restText(operation)}
            </p>
          ) : null}
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
