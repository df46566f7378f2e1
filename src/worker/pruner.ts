import type { Logger } from "pino";
import type { PruneResult } from "../core/retention.js";
import { RETENTION_FIRST_SWEEP_MAX_MS } from "../core/defaults.js";
import type { WorkerMetrics } from "../metrics/worker-metrics.js";

/**
 * Every worker prunes old finished jobs and dead letters; there is no leader.
 * Concurrent prunes are safe and never wait on each other: each batch locks
 * its rows with SKIP LOCKED (see sql/retention.ts). Waits are jittered ±25% so
 * a fleet started together does not prune in lockstep. `stop()` ends a long
 * prune after the batch in flight.
 */
export class Pruner {
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;
  private readonly abort = new AbortController();
  private sweeping: Promise<PruneResult> | null = null;

  constructor(
    private readonly prune: (signal: AbortSignal) => Promise<PruneResult>,
    private readonly intervalMs: number,
    private readonly metrics: WorkerMetrics,
    private readonly log: Logger,
  ) {}

  start(): void {
    // The first prune comes soon, so a worker that runs only briefly still prunes.
    this.schedule(Math.min(this.intervalMs, RETENTION_FIRST_SWEEP_MAX_MS));
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      void this.sweep()
        .catch((error: unknown) => {
          this.metrics.databaseErrors.inc({ operation: "prune" });
          this.log.warn({ err: (error as Error).message }, "prune failed; will retry");
        })
        .finally(() => this.schedule(this.intervalMs));
    }, delayMs * (0.75 + Math.random() * 0.5));
  }

  /** Prune now (one at a time: a call during a prune joins it); returns the rows deleted. */
  sweep(): Promise<PruneResult> {
    this.sweeping ??= this.pruneAndReport().finally(() => {
      this.sweeping = null;
    });
    return this.sweeping;
  }

  private async pruneAndReport(): Promise<PruneResult> {
    const result = await this.prune(this.abort.signal);
    if (result.jobs > 0) this.metrics.pruned.inc({ reason: "finished" }, result.jobs);
    if (result.deadLetters > 0) this.metrics.pruned.inc({ reason: "dead_letter" }, result.deadLetters);
    if (result.jobs + result.deadLetters > 0) {
      this.log.info({ jobs: result.jobs, deadLetters: result.deadLetters }, "pruned old finished jobs and dead letters");
    }
    return result;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.abort.abort();
    await this.sweeping?.catch(() => {});
  }
}
