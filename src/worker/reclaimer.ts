import type { Logger } from "pino";
import { RECLAIM_BATCH_SIZE } from "../core/defaults.js";
import type { WorkerMetrics } from "../metrics/worker-metrics.js";
import type { JobStore } from "../store/job-store.js";
import { Periodic } from "./periodic.js";

/**
 * Every worker sweeps for expired leases; there is no leader. Concurrent
 * sweeps are safe because each row is taken under FOR UPDATE SKIP LOCKED and
 * its expiry re-checked after locking (see jobReclaimExpired). Runs on a
 * jittered interval (Periodic).
 */
export class Reclaimer {
  private readonly periodic: Periodic<number>;

  constructor(
    private readonly store: JobStore,
    private readonly intervalMs: number,
    private readonly metrics: WorkerMetrics,
    private readonly log: Logger,
  ) {
    this.periodic = new Periodic(() => this.sweepAll(), intervalMs, (error) => {
      this.metrics.databaseErrors.inc({ operation: "reclaim" });
      this.log.warn({ err: (error as Error).message }, "reclaim sweep failed; will retry");
    });
  }

  start(): void {
    // First sweep soon after start: after a whole-fleet crash nobody else may be sweeping.
    this.periodic.start(Math.min(this.intervalMs, 1_000));
  }

  /** Reclaim every expired lease now, in batches; returns how many jobs were reclaimed. */
  sweep(): Promise<number> {
    return this.periodic.runNow();
  }

  private async sweepAll(): Promise<number> {
    let total = 0;
    for (;;) {
      const jobs = await this.store.jobReclaimExpired(RECLAIM_BATCH_SIZE);
      for (const job of jobs) {
        this.metrics.reclaimed.inc({ result: job.status });
        if (job.status === "dead") this.metrics.deadLettered.inc({ kind: job.kind });
      }
      total += jobs.length;
      if (jobs.length > 0) {
        this.log.info({ count: jobs.length, jobIds: jobs.slice(0, 20).map((job) => job.id) }, "reclaimed jobs with expired leases");
      }
      if (jobs.length < RECLAIM_BATCH_SIZE) return total;
    }
  }

  stop(): Promise<void> {
    return this.periodic.stop();
  }
}
