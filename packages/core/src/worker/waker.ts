import type { Logger } from "pino";
import { WAKE_BATCH_SIZE } from "../core/defaults.js";
import type { MetricRecorders } from "../metrics/worker-metrics.js";
import type { StepStore } from "../store/step-store.js";
import { Periodic } from "./periodic.js";

/**
 * Queues sleeping jobs whose time has come (`wake` in core/transitions.ts),
 * on every worker, with no leader: each batch is one statement over
 * jobs_sleeping_idx that skips rows another waker holds
 * (StepStore.jobWakeSleeping). The status change notifies idle workers
 * (trigger jobs_status_changed). A job woken by an event needs no waker:
 * sendEvent queues it itself.
 */
export class Waker {
  private readonly periodic: Periodic<number>;

  constructor(
    private readonly steps: StepStore,
    intervalMs: number,
    private readonly metrics: MetricRecorders,
    private readonly log: Logger,
  ) {
    this.periodic = new Periodic(() => this.wakeAll(), intervalMs, (error) => {
      this.metrics.databaseErrors.inc({ operation: "wake" });
      this.log.warn({ err: (error as Error).message }, "waking sleeping jobs failed; will retry");
    });
  }

  start(): void {
    this.periodic.start(0);
  }

  /** Queue every sleeping job whose time has come, now; returns how many. */
  wake(): Promise<number> {
    return this.periodic.runNow();
  }

  stop(): Promise<void> {
    return this.periodic.stop();
  }

  private async wakeAll(): Promise<number> {
    let total = 0;
    for (;;) {
      const woken = await this.steps.jobWakeSleeping(WAKE_BATCH_SIZE);
      total += woken.length;
      this.metrics.woken.inc(woken.length);
      if (woken.length < WAKE_BATCH_SIZE) return total;
    }
  }
}
