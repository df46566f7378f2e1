import type { JobFilter } from "./job-filter.js";
import type { JobStatus } from "./states.js";

// Bulk actions: one change applied to every job a filter selects, done on
// the server in short batches and recorded as an operation of its own.
//
//   running ─(walk reaches the end)─▶ succeeded
//      │ ├──(cancel seen between batches)─▶ cancelled
//      │ └──(a batch fails for good)──────▶ failed
//      └─ owner gone (lease expired): another process takes it over, still running

/** What a bulk action does; `BULK_ACTION_STATES` says to which jobs. */
export const BULK_ACTIONS = ["retry", "cancel", "purge", "set_priority", "move"] as const;
/** One of `BULK_ACTIONS`. */
export type BulkActionKind = (typeof BULK_ACTIONS)[number];

/** Where an operation is: running until its walk ends, then one of the three ends. */
export const BULK_ACTION_STATUSES = ["running", "succeeded", "cancelled", "failed"] as const;
/** One of `BULK_ACTION_STATUSES`. */
export type BulkActionStatus = (typeof BULK_ACTION_STATUSES)[number];

/**
 * The job states each action touches; a job in any other state is left as
 * it is, whatever the filter says. Within them, a job the action has
 * already changed is not touched again, so running an action twice is
 * safe:
 * - `retry`: `dead` jobs are requeued as `deadLetters.requeue` does (fresh
 *   attempts, same id); `retrying` jobs waiting for their backoff run now.
 * - `cancel`: `waiting`, `queued`, `retrying` and `sleeping` jobs are
 *   cancelled at once; `running` ones get their cancel request, as `cancel` does.
 * - `purge`: finished jobs (`succeeded`, `cancelled`, `dead`) are deleted
 *   with their history; unfinished ones never.
 * - `set_priority`, `move`: jobs that are not running (`waiting`, `queued`,
 *   `retrying`, `sleeping`) get the new priority or queue.
 */
export const BULK_ACTION_STATES: Readonly<Record<BulkActionKind, readonly JobStatus[]>> = Object.freeze({
  retry: ["dead", "retrying"],
  cancel: ["waiting", "queued", "retrying", "sleeping", "running"],
  purge: ["succeeded", "cancelled", "dead"],
  set_priority: ["waiting", "queued", "retrying", "sleeping"],
  move: ["waiting", "queued", "retrying", "sleeping"],
});

/**
 * A job filter as an operation records it: the `JobFilter` given, with its
 * times as ISO 8601 text (JSON).
 */
export type BulkActionFilter = {
  [K in keyof JobFilter]: Exclude<JobFilter[K], undefined> extends Date ? string : JobFilter[K];
};

/** What `bulkActions.start` takes. */
export interface BulkActionInput {
  /** What to do (see `BULK_ACTION_STATES` for the jobs each touches). */
  action: BulkActionKind;
  /**
   * Which jobs: every field given must match. A filter with no field
   * besides `tenant` covers every job and is refused unless `all` is true.
   */
  filter: JobFilter;
  /** `set_priority` only, and required there: the new priority, `MIN_PRIORITY`..`MAX_PRIORITY`. */
  priority?: number;
  /** `move` only, and required there: the queue to move the jobs to (a name as at enqueue). */
  queue?: string;
  /** Act on every job of the scope when the filter names nothing. Default false. */
  all?: boolean;
  /** Who asked, kept on the operation for the record (at most 256 characters). Default none. */
  requestedBy?: string;
}

/** A bulk action as stored: what was asked, by whom, and how far it got. */
export interface BulkAction {
  /** A UUIDv7: operations sort by creation time. */
  id: string;
  /** The tenant whose jobs it acts on; null for every tenant. */
  tenant: string | null;
  /** What it does. */
  action: BulkActionKind;
  /** The filter as given. */
  filter: BulkActionFilter;
  /** The new priority (`set_priority`); null otherwise. */
  priority: number | null;
  /** The queue jobs move to (`move`); null otherwise. */
  queue: string | null;
  /** Where it is. */
  status: BulkActionStatus;
  /** Who asked: an API key id, `cli:<user>@<host>`, or what the library caller gave; null when unknown. */
  requestedBy: string | null;
  /** How many jobs the filter covered when it started (an estimate on large tables); null when unknown. */
  total: number | null;
  /** Jobs changed (or deleted) so far. */
  touched: number;
  /** Set once cancellation was asked; the walk stops before its next batch. */
  cancelRequested: boolean;
  /** Why it failed; null unless `status` is `failed`. */
  error: string | null;
  /** When it was asked for (database clock). */
  createdAt: Date;
  /** When its record last changed (each batch changes it). */
  updatedAt: Date;
  /** When it ended; null while running. */
  finishedAt: Date | null;
}

const FILTER_TIMES = ["createdAfter", "createdBefore", "finishedAfter", "finishedBefore"] as const;

/** A filter as an operation records it (times as ISO 8601 text). */
export function bulkActionFilterOf(filter: JobFilter): BulkActionFilter {
  const recorded: Record<string, unknown> = { ...filter };
  for (const field of FILTER_TIMES) {
    const value = filter[field];
    if (value instanceof Date) recorded[field] = value.toISOString();
  }
  return recorded as BulkActionFilter;
}

/** The `JobFilter` back from its record, for a process that resumes the operation. */
export function jobFilterOfBulkAction(recorded: BulkActionFilter): JobFilter {
  const filter: Record<string, unknown> = { ...recorded };
  for (const field of FILTER_TIMES) {
    const value = recorded[field];
    if (typeof value === "string") filter[field] = new Date(value);
  }
  return filter as JobFilter;
}
