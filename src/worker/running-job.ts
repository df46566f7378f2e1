import type { ClaimedJob } from "../core/model.js";

/** Why an attempt was ended from outside the handler, without waiting for it. */
export type ForcedEnd =
  | { kind: "timeout"; reason: Error }
  | { kind: "lease_lost"; reason: Error }
  | { kind: "shutdown"; reason: Error };

/** How the handler's run ended: it returned, it threw, or the attempt was forced to end first. */
export type Settled = { kind: "returned"; value: unknown } | { kind: "threw"; error: unknown } | { kind: "forced"; end: ForcedEnd };

/**
 * A job this worker holds: its execution id, the handler's abort signal,
 * and what the worker knows of its lease. `phase` moves from `running` to
 * `writing` when the outcome is on its way to the database, so a heartbeat
 * that no longer finds the row is not mistaken for a lost lease.
 *
 * Built for every claimed job, so it allocates little: the AbortController
 * is made only when someone reads `signal` (most handlers never do), and
 * the end of the run is one promise settled by whichever comes first, the
 * handler or `force()`, rather than a race between two.
 */
export class RunningJob {
  phase: "running" | "writing" = "running";
  cancelObserved = false;
  /**
   * performance.now() by which the lease has surely expired: the time the
   * last successful renewal was *sent* plus the lease. Measured from the
   * send, not the answer, so it errs early, never late.
   */
  leaseDeadline: number;
  private controller: AbortController | null = null;
  private abortReason: Error | null = null;
  private settle: ((settled: Settled) => void) | null = null;
  private pendingEnd: ForcedEnd | null = null;

  readonly executionId: string;

  constructor(
    readonly job: ClaimedJob,
    claimSentAt: number,
    leaseMs: number,
  ) {
    this.executionId = job.executionId;
    this.leaseDeadline = claimSentAt + leaseMs;
  }

  /** The handler's signal; aborted when the job is cancelled, times out, loses its lease or the worker shuts down. */
  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.abortReason) this.controller.abort(this.abortReason);
    }
    return this.controller.signal;
  }

  get aborted(): boolean {
    return this.abortReason !== null;
  }

  /** Abort the handler's signal (once) with this reason. */
  abort(reason: Error): void {
    if (this.abortReason) return;
    this.abortReason = reason;
    this.controller?.abort(reason);
  }

  /** Abort and stop waiting for the handler: the attempt ends now as `end` says. */
  force(end: ForcedEnd): void {
    this.abort(end.reason);
    if (this.settle) this.settle({ kind: "forced", end });
    else this.pendingEnd ??= end; // forced before the handler started: it never will
  }

  /**
   * Run the handler; resolves when it returns or throws, or when `force()`
   * is called first. The handler's own promise is always observed (both
   * arms), so one that rejects after we stopped waiting cannot crash the
   * process. Call once. The handler and its argument come apart, not as a
   * closure, which would be one more allocation per job.
   */
  run<C>(handler: (context: C) => unknown, context: C): Promise<Settled> {
    return new Promise<Settled>((resolve) => {
      // Cleared on first use: whatever comes second (a late handler, a later force) finds nothing to settle.
      this.settle = (settled) => {
        this.settle = null;
        resolve(settled);
      };
      if (this.pendingEnd) {
        this.settle({ kind: "forced", end: this.pendingEnd });
        return;
      }
      try {
        const result = handler(context);
        if (isThenable(result)) {
          result.then(
            (value) => this.settle?.({ kind: "returned", value }),
            (error: unknown) => this.settle?.({ kind: "threw", error }),
          );
        } else {
          this.settle({ kind: "returned", value: result });
        }
      } catch (error) {
        // The handler threw, or its result's `then` did: a failure either way.
        this.settle?.({ kind: "threw", error });
      }
    });
  }
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return value !== null && (typeof value === "object" || typeof value === "function") && typeof (value as { then?: unknown }).then === "function";
}
