import type { Logger } from "pino";
import { RECLAIM_BATCH_SIZE } from "../core/defaults.js";
import type { WorkerMetrics } from "../metrics/worker-metrics.js";
import type { JobStore } from "../store/job-store.js";

/**
 * Every worker sweeps for expired leases; there is no leader. Concurrent
 * sweeps are safe because each row is taken under FOR UPDATE SKIP LOCKED and
 * its expiry re-checked after locking (see jobReclaimExpired). The interval
 * is jittered ±25% so a fleet started together does not sweep in lockstep.
 */
export class Reclaimer {
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;
  private sweeping: Promise<number> | null = null;

  constructor(
    private readonly store: JobStore,
    private readonly intervalMs: number,
    private readonly metrics: WorkerMetrics,
    private readonly log: Logger,
  ) {}

  start(): void {
    // First sweep soon after start: after a whole-fleet crash nobody else may be sweeping.
    this.schedule(Math.min(this.intervalMs, 1_000));
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      void this.sweep()
        .catch((error: unknown) => {
          this.metrics.databaseErrors.inc({ operation: "reclaim" });
          this.log.warn({ err: (error as Error).message }, "reclaim sweep failed; will retry");
        })
        .finally(() => this.schedule(this.intervalMs * (0.75 + Math.random() * 0.5)));
    }, delayMs);
  }

  /** Reclaim every expired lease now, in batches; returns how many jobs were reclaimed. */
  sweep(): Promise<number> {
    this.sweeping ??= this.sweepAll().finally(() => {
      this.sweeping = null;
    });
    return this.sweeping;
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

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.sweeping?.catch(() => {});
  }
}
