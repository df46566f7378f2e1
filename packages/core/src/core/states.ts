/**
 * Job states. See the lifecycle in docs/jobs.md; every transition, as
 * data, is in core/transitions.ts:
 *
 *   waiting ─(every dependency ended)─▶ queued
 *   queued ─▶ running ─▶ succeeded
 *     ▲         ├────▶ retrying ─(run_at ≤ now)─▶ running
 *     │         ├────▶ dead      (attempts spent or a permanent error)
 *     │         └────▶ cancelled (cancel observed)
 *   requeue (from dead)          queued | retrying ─ cancel ─▶ cancelled
 *   running ─(sleep, waitForEvent)─▶ sleeping ─(its time, its event)─▶ queued
 */
export const JOB_STATUSES = ["waiting", "queued", "running", "retrying", "sleeping", "succeeded", "cancelled", "dead"] as const;
/** A job's state: one of `JOB_STATUSES`. */
export type JobStatus = (typeof JOB_STATUSES)[number];

/** States a job never leaves on its own (only `requeue` moves `dead` back). */
export const TERMINAL_STATUSES: readonly JobStatus[] = ["succeeded", "cancelled", "dead"];

/** States from which a worker may claim the job once `run_at` has passed. */
export const READY_STATUSES: readonly JobStatus[] = ["queued", "retrying"];

export function isTerminal(status: JobStatus): boolean {
  return TERMINAL_STATUSES.includes(status);
}

export function isJobStatus(value: string): value is JobStatus {
  return (JOB_STATUSES as readonly string[]).includes(value);
}

/**
 * How one attempt ended, as recorded in `job_executions.outcome`, or
 * `running` for the attempt still under way (read from its job row, never
 * stored as an execution row). `lease_expired` and `interrupted` are written
 * by Conveyor itself, never by a handler.
 */
export const EXECUTION_OUTCOMES = [
  "running",
  "succeeded",
  "failed",
  "timeout",
  "retry_after",
  "cancelled",
  "lease_expired",
  "interrupted",
  "suspended",
] as const;
/** How one attempt ended: one of `EXECUTION_OUTCOMES`. */
export type ExecutionOutcome = (typeof EXECUTION_OUTCOMES)[number];
