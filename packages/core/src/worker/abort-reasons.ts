/**
 * Reasons a handler's AbortSignal fires, as `signal.reason`. Handlers can
 * tell them apart by `name` (or instanceof).
 */

/** Someone asked to cancel the job. The job ends `cancelled` when the handler returns. */
export class JobCancelledError extends Error {
  constructor() {
    super("job cancellation was requested");
    this.name = "JobCancelledError";
  }
}

/** The lease was lost: another worker may own the job now. Nothing this attempt writes will count. */
export class LeaseLostError extends Error {
  constructor(detail = "the lease was lost") {
    super(detail);
    this.name = "LeaseLostError";
  }
}

/** The attempt ran past the job kind's `timeoutMs`; it is recorded as a timeout and retried. */
export class JobTimeoutError extends Error {
  constructor(timeoutMs: number) {
    super(`attempt timed out after ${timeoutMs} ms`);
    this.name = "JobTimeoutError";
  }
}

/** The worker is shutting down and the grace period ran out; the job goes back to the queue. */
export class WorkerShutdownError extends Error {
  constructor() {
    super("worker shut down before the handler finished; the job was handed back");
    this.name = "WorkerShutdownError";
  }
}
