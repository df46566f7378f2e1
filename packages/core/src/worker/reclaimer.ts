import type { Logger } from "pino";
import { RECLAIM_BATCH_SIZE } from "../core/defaults.js";
import type { MetricRecorders } from "../metrics/worker-metrics.js";
import type { JobStore } from "../store/job-store.js";
import { Periodic } from "./periodic.js";
import type { Job } from "../core/model.js";
import type { TraceContext } from "../core/trace-context.js";
import type { Tracing } from "../tracing/tracing.js";
import { TestSignal } from "./test-signal.js";
import { Waker } from "./waker.js";
import type { StepStore } from "../store/step-store.js";

/** One sweep as its test signal reports it. */
export interface ReclaimSweep {
  /** Every job the sweep reclaimed, as moved (empty when no lease had expired). */
  reclaimed: readonly Job[];
}

/** What the reclaimer reports to tests (workerTestSignals in test-signals.ts); off until `init()`. */
export class ReclaimerTestSignals {
  /** A sweep ended, on the worker's interval or through `reclaimExpired()`. A sweep that failed reports nothing. */
  readonly swept = new TestSignal<ReclaimSweep>();

  init(): void {
    this.swept.init();
  }
}

/**
 * Every worker sweeps for expired leases; there is no leader. Each batch is
 * one transaction (JobStore.jobReclaimExpired): lock the expired running
 * jobs, decide each one's end in core (decideExpiredLease: retrying, dead,
 * or cancelled when a cancel was requested), apply the decisions in one
 * statement. Concurrent sweeps are safe because each row is taken under
 * FOR UPDATE SKIP LOCKED and its expiry re-checked after locking. Runs on
 * a jittered interval (Periodic). The waker of sleeping jobs (waker.ts)
 * starts and stops with it, on an interval of its own.
 */
export class Reclaimer {
  private readonly periodic: Periodic<number>;
  /** Queues due sleeping jobs; started and stopped with the sweep. */
  private readonly waker: Waker | undefined;
  /** For tests: each sweep reported as it ends (workerTestSignals). */
  readonly testSignals = new ReclaimerTestSignals();

  constructor(
    private readonly store: JobStore,
    private readonly intervalMs: number,
    private readonly metrics: MetricRecorders,
    private readonly log: Logger,
    private readonly tracing?: { tracing: Tracing; workerId: string },
    sleepers?: { steps: StepStore; intervalMs: number },
  ) {
    this.waker = sleepers && new Waker(sleepers.steps, sleepers.intervalMs, metrics, log);
    this.periodic = new Periodic(() => this.sweepAll(), intervalMs, (error) => {
      this.metrics.databaseErrors.inc({ operation: "reclaim" });
      this.log.warn({ err: (error as Error).message }, "reclaim sweep failed; will retry");
    });
  }

  start(): void {
    // First sweep soon after start: after a whole-fleet crash nobody else may be sweeping.
    this.periodic.start(Math.min(this.intervalMs, 1_000));
    this.waker?.start();
  }

  /** Reclaim every expired lease now, in batches; returns how many jobs were reclaimed. */
  sweep(): Promise<number> {
    return this.periodic.runNow();
  }

  private async sweepAll(): Promise<number> {
    let total = 0;
    // Kept for the test signal only: a sweep after a fleet-wide crash may move many thousands.
    const reclaimed: Job[] = [];
    for (;;) {
      const jobs = await this.store.jobReclaimExpired(RECLAIM_BATCH_SIZE);
      for (const job of jobs) {
        this.metrics.reclaimed.inc({ result: job.status });
        if (job.status === "dead") this.metrics.deadLettered.inc({ kind: job.kind });
      }
      total += jobs.length;
      if (this.testSignals.swept.on) reclaimed.push(...jobs);
      if (jobs.length > 0 && this.tracing?.tracing.active) await this.traceExpired(jobs);
      if (jobs.length > 0) {
        this.log.info({ count: jobs.length, jobIds: jobs.slice(0, 20).map((job) => job.id) }, "reclaimed jobs with expired leases");
      }
      if (jobs.length < RECLAIM_BATCH_SIZE) break;
    }
    this.testSignals.swept.signal({ reclaimed });
    return total;
  }

  /** Spans for the expired attempts (Tracing.leaseExpired); a failure to read their contexts costs the links only. */
  private async traceExpired(jobs: readonly Job[]): Promise<void> {
    const contexts = await this.store.jobTraceContexts(jobs.map((job) => job.id)).catch(() => new Map<string, { own: TraceContext | null }>());
    // The expired attempt counts (jobReclaimExpired): `attempts` is its number.
    const expired = jobs.map((job) => ({ ...job, traceContext: contexts.get(job.id)?.own ?? null }));
    this.tracing!.tracing.leaseExpired(expired, this.tracing!.workerId);
  }

  async stop(): Promise<void> {
    await Promise.all([this.periodic.stop(), this.waker?.stop()]);
  }
}
