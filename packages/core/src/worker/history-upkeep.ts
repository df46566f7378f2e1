import type { Logger } from "pino";
import { HISTORY_DAYS_AHEAD, HISTORY_UPKEEP_INTERVAL_MS } from "../core/defaults.js";
import type { MetricRecorders } from "../metrics/worker-metrics.js";
import type { RetentionStore } from "../store/retention-store.js";
import { Periodic } from "./periodic.js";
import { TestSignal } from "./test-signal.js";

/** What the upkeep of history's partitions reports to tests (workerTestSignals in test-signals.ts); off until `init()`. */
export class HistoryUpkeepTestSignals {
  /** A run ended, at the worker's start or on its interval, with how many day partitions it made. A run that failed reports nothing. */
  readonly extended = new TestSignal<{ made: number }>();

  init(): void {
    this.extended.init();
  }
}

/**
 * Every worker keeps job_history's day partitions made for today and
 * `HISTORY_DAYS_AHEAD` days ahead, whether it prunes or not, so that while
 * any worker runs no day's jobs end in job_history_default: once as it
 * starts, before it claims (a schema nobody kept up gets today's day
 * before this worker ends a job), then on a jittered interval (Periodic).
 * There is no leader: any number of workers may run it at once, as
 * job_history_extend lets one extender at a time make the days and the
 * others leave them to it, never waiting long for a lock
 * (routines/job-history-extend.ts).
 */
export class HistoryUpkeep {
  private readonly periodic: Periodic<number>;
  /** For tests: each run reported as it ends (workerTestSignals). */
  readonly testSignals = new HistoryUpkeepTestSignals();

  constructor(
    private readonly store: RetentionStore,
    private readonly metrics: MetricRecorders,
    private readonly log: Logger,
    intervalMs = HISTORY_UPKEEP_INTERVAL_MS,
  ) {
    this.periodic = new Periodic(() => this.extend(), intervalMs, (error) => this.failed(error));
  }

  /** Run once now, then on the interval. Resolves when the first run ended; a run that fails is logged and counted, never thrown. */
  async start(): Promise<void> {
    await this.periodic.runNow().catch((error: unknown) => this.failed(error));
    this.periodic.start();
  }

  /** Stop the interval and wait for a run in flight. */
  stop(): Promise<void> {
    return this.periodic.stop();
  }

  private async extend(): Promise<number> {
    const made = await this.store.historyExtend(HISTORY_DAYS_AHEAD);
    if (made > 0) this.log.info({ made, daysAhead: HISTORY_DAYS_AHEAD }, "made day partitions of job history");
    this.testSignals.extended.signal({ made });
    return made;
  }

  private failed(error: unknown): void {
    this.metrics.databaseErrors.inc({ operation: "history_upkeep" });
    this.log.warn({ err: (error as Error).message }, "could not make the day partitions of job history; will retry");
  }
}
