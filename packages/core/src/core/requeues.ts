/**
 * How a job came to run again with fresh attempts, as recorded in
 * `job_requeues.action` and shown on the job's timeline:
 *
 * - `requeue`: its dead letter was requeued (`deadLetters.requeue`);
 * - `bulk_retry`: a bulk `retry` requeued it from the dead-letter queue;
 * - `resume`: `steps.resume` ran it again, replaying every recorded step;
 * - `rerun`: `steps.rerunFrom` ran it again from a named step.
 *
 * A bulk retry of a job waiting for its backoff only brings its next
 * attempt forward (its attempts go on), so it records nothing.
 */
export const REQUEUE_ACTIONS = ["requeue", "bulk_retry", "resume", "rerun"] as const;
/** How a job came to run again: one of `REQUEUE_ACTIONS`. */
export type RequeueAction = (typeof REQUEUE_ACTIONS)[number];
