import type { Logger } from "pino";
import type { Queryable } from "../store/db.js";
import type { HandlerStore } from "../store/handler-store.js";
import type { MetricRecorders } from "../metrics/worker-metrics.js";
import { LeaseLostError } from "./abort-reasons.js";
import { AttemptTransaction } from "./attempt-transaction.js";
import { ProgressReporter } from "./progress-reporter.js";
import type { Attempt } from "./attempt.js";

/** What `HandlerTools` gives one attempt: the context functions, and what the executor asks at the end. */
export interface AttemptTools {
  progress(value: unknown): Promise<boolean>;
  transaction<T>(work: (tx: Queryable) => Promise<T>): Promise<T>;
  /**
   * The handler settled or the attempt was forced to end: write the last
   * progress (discarded when the lease is known lost) and wait for a
   * transactional completion already on its way.
   */
  finish(leaseLost: boolean): Promise<void>;
}

/**
 * Makes the per-attempt `ctx.progress` and `ctx.transaction` of one worker,
 * for an attempt whose handler first calls one of them (AttemptContext).
 */
export class HandlerTools {
  constructor(
    private readonly store: HandlerStore,
    private readonly progressIntervalMs: number,
    private readonly metrics: MetricRecorders,
  ) {}

  forAttempt(running: Attempt, log: () => Logger): AttemptTools {
    // Each built on first use: a handler that reports progress seldom opens a transaction too.
    let reporter: ProgressReporter | null = null;
    let transaction: AttemptTransaction | null = null;
    const reporterOf = (): ProgressReporter =>
      (reporter ??= new ProgressReporter(
        this.store,
        running.job.id,
        running.executionId,
        this.progressIntervalMs,
        log(),
        () => {
          this.metrics.fencedWrites.inc({ operation: "progress" });
          // Fenced while the handler still runs: the lease was lost, as a
          // heartbeat would find. Stop the handler the same way.
          if (running.holdsLease) {
            running.force({ kind: "lease_lost", reason: new LeaseLostError("the lease was lost: a progress write found the job no longer ours, or its lease's deadline had passed") });
          }
        },
        () => running.leaseDeadline,
      ));
    const transactionOf = (): AttemptTransaction =>
      (transaction ??= new AttemptTransaction(this.store, running, () => reporter?.settle() ?? Promise.resolve()));
    return {
      progress: (value) => reporterOf().report(value),
      transaction: (work) => transactionOf().run(work),
      async finish(leaseLost) {
        if (transaction) await transaction.settled();
        if (reporter) await reporter.close(leaseLost || running.committed);
      },
    };
  }
}
