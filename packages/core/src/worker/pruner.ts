import type { Logger } from "pino";
import type { PruneResult } from "../core/retention.js";
import { RETENTION_FIRST_SWEEP_MAX_MS } from "../core/defaults.js";
import type { MetricRecorders } from "../metrics/worker-metrics.js";
import { Periodic } from "./periodic.js";
import { TestSignal } from "./test-signal.js";

/** What the pruner reports to tests (workerTestSignals in test-signals.ts); off until `init()`. */
export class PrunerTestSignals {
  /** A prune ended, on the worker's interval or through `sweep()`, with what it deleted. A prune that failed reports nothing. */
  readonly pruned = new TestSignal<PruneResult>();

  init(): void {
    this.pruned.init();
  }
}

/**
 * Every worker prunes old finished jobs and dead letters; there is no leader.
 * Concurrent prunes are safe and never wait on each other: each batch locks
 * its rows with SKIP LOCKED (see sql/retention.ts). Runs on a jittered
 * interval (Periodic). `stop()` ends a long prune after the batch in flight.
 */
export class Pruner {
  private readonly abort = new AbortController();
  private readonly periodic: Periodic<PruneResult>;
  /** For tests: each prune reported as it ends (workerTestSignals). */
  readonly testSignals = new PrunerTestSignals();

  constructor(
    private readonly prune: (signal: AbortSignal) => Promise<PruneResult>,
    private readonly intervalMs: number,
    private readonly metrics: MetricRecorders,
    private readonly log: Logger,
  ) {
    this.periodic = new Periodic(() => this.pruneAndReport(), intervalMs, (error) => {
      this.metrics.databaseErrors.inc({ operation: "prune" });
      this.log.warn({ err: (error as Error).message }, "prune failed; will retry");
    });
  }

  start(): void {
    // The first prune comes soon, so a worker that runs only briefly still prunes.
    this.periodic.start(Math.min(this.intervalMs, RETENTION_FIRST_SWEEP_MAX_MS));
  }

  /** Prune now (one at a time: a call during a prune joins it); returns the rows deleted. */
  sweep(): Promise<PruneResult> {
    return this.periodic.runNow();
  }

  private async pruneAndReport(): Promise<PruneResult> {
    const result = await this.prune(this.abort.signal);
    if (result.jobs > 0) this.metrics.pruned.inc({ reason: "finished" }, result.jobs);
    if (result.deadLetters > 0) this.metrics.pruned.inc({ reason: "dead_letter" }, result.deadLetters);
    if (result.events > 0) this.metrics.pruned.inc({ reason: "event" }, result.events);
    if (result.jobs + result.deadLetters + result.flows + result.events > 0) {
      this.log.info({ jobs: result.jobs, deadLetters: result.deadLetters, flows: result.flows, events: result.events }, "pruned old finished jobs, dead letters and events");
    }
    this.testSignals.pruned.signal(result);
    return result;
  }

  /** Stop pruning: a prune in flight ends after its current batch. */
  stop(): Promise<void> {
    this.abort.abort();
    return this.periodic.stop();
  }
}
