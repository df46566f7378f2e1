import { DEFAULT_KEEP_SUCCEEDED } from "../core/defaults.js";
import type { ClaimedJob } from "../core/model.js";

/**
 * One claimed attempt of a job, from the claim to its recorded end. Its
 * phase changes only through the methods below:
 *
 *   claimed ──run()──▶ running ──┬─ the handler returned ─┐
 *      │                         ├─ the handler threw ────┼─ startWriting() ─▶ writing ─ finish() ─▶ done
 *      └─ force() ───────────────┴─ force(): timeout, ────┘                  (decide and write
 *                                   lease lost, shutdown                      the outcome)
 *
 *   ctx.transaction, from claimed or running:
 *     beginCommit() ─▶ committing ─ COMMIT ok: commitSucceeded() ─▶ committed ─ finish() ─▶ done
 *                          │                 (startWriting() leaves it committed: nothing more is written)
 *                          └─ refused or failed: commitFailed() ─▶ running
 *
 * - claimed, running: the attempt needs its lease (`holdsLease`): the
 *   lease keeper renews it, and a renewal, progress write or transaction
 *   that no longer matches the execution id means the lease was lost, which
 *   forces the end.
 * - A requested cancel does not force the end: the worker aborts the
 *   handler's signal once (`observeCancel`), told by the cancel's NOTIFY or
 *   by the lease keeper's renewal, and the attempt runs on until
 *   the handler returns or throws; the write then ends the job `cancelled`
 *   (jobEndAttempts reads the request under its row lock).
 * - committing: a handler's `ctx.transaction` has sent its fenced completion
 *   and is committing. The job row leaves `running` at COMMIT, so from here
 *   no heartbeat or fence miss is taken for a lost lease.
 * - committed: the job is succeeded in the database with the transaction's
 *   result. Whatever the handler does afterwards is logged, never written.
 * - A durable sleep or wait ends the attempt from inside the handler
 *   (worker/durable-run.ts): beginSuspend() ─▶ committing ─ the job now
 *   sleeps: suspendSucceeded() ─▶ committed (`suspended`), or refused,
 *   failed, or an event was already there: suspendFailed() ─▶ running.
 *   Nothing more is written for a suspended attempt.
 * - writing: the handler settled or was forced; executor.ts decides the
 *   outcome (core/outcome.ts) and writes it. A transaction already on its
 *   way may still commit, which moves the attempt to committed.
 * - done: the outcome was written, fenced away, or given up.
 *
 * Built for every claimed job, so it allocates little: the AbortController
 * is made only when someone reads `signal` (most handlers never do), and
 * the end of the run is one promise settled by whichever comes first, the
 * handler or `force()`, rather than a race between two.
 */

/** Why an attempt was ended from outside the handler, without waiting for it. */
export type ForcedEnd =
  | { kind: "timeout"; reason: Error }
  | { kind: "lease_lost"; reason: Error }
  | { kind: "shutdown"; reason: Error };

/** How the handler's run ended: it returned, it threw, or the attempt was forced to end first. */
export type Settled = { kind: "returned"; value: unknown } | { kind: "threw"; error: unknown } | { kind: "forced"; end: ForcedEnd };

export type AttemptPhase = "claimed" | "running" | "committing" | "committed" | "writing" | "done";

/** A job this worker holds: its execution id, the handler's abort signal, what the worker knows of its lease, and its phase. */
export class Attempt {
  #phase: AttemptPhase = "claimed";
  #cancelObserved = false;
  /** Kept apart from the phase: it stays true when the attempt is done, so a later ctx.transaction is still refused as a second completion. */
  #committed = false;
  /** Set when a sleep or a wait ended the attempt in the database: nothing more is written. */
  #suspended = false;
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
    /** Whether a success keeps the job in history (its kind's `retention.keepSucceeded`). */
    readonly keepSucceeded: boolean = DEFAULT_KEEP_SUCCEEDED,
  ) {
    this.executionId = job.executionId;
    this.leaseDeadline = claimSentAt + leaseMs;
  }

  get phase(): AttemptPhase {
    return this.#phase;
  }

  /**
   * True while the attempt needs its lease (claimed, running): renew it, and
   * take a fence that no longer matches for a lost lease. Afterwards the row
   * may leave `running` legitimately.
   */
  get holdsLease(): boolean {
    return this.#phase === "claimed" || this.#phase === "running";
  }

  /** True once a `ctx.transaction` committed: the job is succeeded and no outcome must be written. */
  get committed(): boolean {
    return this.#committed;
  }

  /** True once a sleep or a wait suspended the job: the attempt's end is written. */
  get suspended(): boolean {
    return this.#suspended;
  }

  /** A sleep or a wait is about to end the attempt in the database: stop treating the row as one we lease. */
  beginSuspend(): void {
    this.beginCommit();
  }

  /** The suspension was refused, failed, or a wait found its event: the job is still running and ours. */
  suspendFailed(): void {
    this.commitFailed();
  }

  /** The suspension was written: the job sleeps (or was cancelled), and this attempt writes nothing more. */
  suspendSucceeded(): void {
    this.#suspended = true;
    this.#phase = "committed";
  }

  /** True once a cancel request was seen (by NOTIFY or a renewal) and the handler's signal aborted for it. */
  get cancelObserved(): boolean {
    return this.#cancelObserved;
  }

  /** A cancel was requested: abort the handler's signal, once. Returns false when already observed. */
  observeCancel(reason: Error): boolean {
    if (this.#cancelObserved) return false;
    this.#cancelObserved = true;
    this.abort(reason);
    return true;
  }

  /** ctx.transaction is about to COMMIT its completion: stop treating the row as one we lease. */
  beginCommit(): void {
    if (this.holdsLease) this.#phase = "committing";
  }

  /** The transaction's COMMIT was refused or failed: the job is still running and ours. */
  commitFailed(): void {
    if (this.#phase === "committing") this.#phase = "running";
  }

  /** The transaction committed: the job is succeeded, whatever phase the handler's side is in. */
  commitSucceeded(): void {
    this.#committed = true;
    this.#phase = "committed";
  }

  /** The handler settled or was forced: the outcome is on its way (a committed transaction stays committed). */
  startWriting(): void {
    if (!this.#committed && !this.#suspended) this.#phase = "writing";
  }

  /** The attempt's end was recorded, fenced away or given up. */
  finish(): void {
    this.#phase = "done";
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
    if (this.#phase === "claimed") this.#phase = "running";
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
