import type { Job } from "../core/model.js";

/** Why an attempt was ended from outside the handler, without waiting for it. */
export type ForcedEnd =
  | { kind: "timeout"; reason: Error }
  | { kind: "lease_lost"; reason: Error }
  | { kind: "shutdown"; reason: Error };

/**
 * A job this worker holds: its execution id, the handler's abort controller,
 * and what the worker knows of its lease. `phase` moves from `running` to
 * `writing` when the outcome is on its way to the database, so a heartbeat
 * that no longer finds the row is not mistaken for a lost lease.
 */
export class RunningJob {
  readonly controller = new AbortController();
  readonly forced: Promise<ForcedEnd>;
  phase: "running" | "writing" = "running";
  cancelObserved = false;
  /**
   * performance.now() by which the lease has surely expired: the time the
   * last successful renewal was *sent* plus the lease. Measured from the
   * send, not the answer, so it errs early, never late.
   */
  leaseDeadline: number;
  private forceEnd!: (end: ForcedEnd) => void;

  constructor(
    readonly job: Job,
    readonly executionId: string,
    claimSentAt: number,
    leaseMs: number,
  ) {
    this.leaseDeadline = claimSentAt + leaseMs;
    this.forced = new Promise((resolve) => {
      this.forceEnd = resolve;
    });
  }

  /** Abort the handler's signal (once) with this reason. */
  abort(reason: Error): void {
    if (!this.controller.signal.aborted) this.controller.abort(reason);
  }

  /** Abort and stop waiting for the handler: the attempt ends now as `end` says. */
  force(end: ForcedEnd): void {
    this.abort(end.reason);
    this.forceEnd(end);
  }
}
