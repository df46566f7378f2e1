// Conditions that change how the statement's own transaction behaves. Each is
// an uncorrelated scalar subquery, so PostgreSQL evaluates it once, as an
// InitPlan, before the statement touches any row. Not statements themselves,
// so this module is not among the store's queries.

/**
 * Always true; lets the transaction commit without waiting for its WAL to
 * reach the disk. For writes that a server crash may lose without harm: a
 * claim (see claim-fragments.ts), a wake-up notification.
 */
export const COMMIT_WITHOUT_WAITING = `(SELECT set_config('synchronous_commit', 'off', true)) = 'off'`;

/**
 * Always true; when `param` (a boolean parameter) is true, tells the insert
 * trigger jobs_notify_ready not to NOTIFY: the client sends the wake-up after
 * the commit (routines/jobs-notify-ready.ts, store/queue-waker.ts).
 */
export function wakeAfterCommit(param: string): string {
  return `(SELECT set_config('conveyor.wake_after_commit', CASE WHEN ${param}::boolean THEN 'on' ELSE '' END, true)) IS NOT NULL`;
}

/**
 * Always true; tells the insert trigger jobs_notify_ready not to NOTIFY, for
 * a statement that sends its own wake-up (or none).
 */
export const SKIP_NOTIFY_TRIGGER = wakeAfterCommit("true");
