import type { ClaimChooserTestSignals } from "./claim-chooser.js";
import type { HistoryUpkeepTestSignals } from "./history-upkeep.js";
import type { PrunerTestSignals } from "./pruner.js";
import type { ReclaimerTestSignals } from "./reclaimer.js";
import type { CronSchedulerTestSignals } from "./scheduler.js";
import { TestSignal } from "./test-signal.js";

// Test signals of a worker's parts, reached from a worker without a public
// member: the worker registers them here when it is made, and a test asks
// for them by the worker. Not exported from the package.

/** A claimed attempt the worker did not start: its claim's answer came after the lease's local deadline. */
export interface LateAttempt {
  jobId: string;
  executionId: string;
  /** How long after the local deadline the answer was read, in ms. */
  lateByMs: number;
}

/** What the worker itself (its claim loop, its start, its cancels) reports to tests; off until `init()`. */
export class WorkerLoopTestSignals {
  /** A claim round ended and its jobs were launched (or skipped as late); `claimed` counts them all. */
  readonly claimRound = new TestSignal<{ claimed: number }>();
  /** The claim loop is about to sleep with no wake-up pending: only a notification or the poll interval wakes it. */
  readonly idle = new TestSignal<void>();
  /** The claim loop ended (the worker is stopping): it claims nothing more. */
  readonly claimLoopEnded = new TestSignal<void>();
  /** A claimed job was not started because its claim was answered too late (see `Worker.launch`). */
  readonly attemptSkippedLate = new TestSignal<LateAttempt>();
  /** A cancel notification arrived (NOTIFY from the cancel's statement); `held`: for an attempt this worker had launched. */
  readonly cancelNotified = new TestSignal<{ executionId: string; held: boolean }>();
  /** A running attempt's handler signal was aborted for a cancel, and how the worker learned of it. */
  readonly cancelObserved = new TestSignal<{ executionId: string; via: "notification" | "heartbeat" }>();
  /** `start()` found the database unreachable and waits `retryInMs` before trying again. */
  readonly databaseWait = new TestSignal<{ attempt: number; code: string; retryInMs: number }>();

  init(): void {
    for (const signal of [this.claimRound, this.idle, this.claimLoopEnded, this.attemptSkippedLate, this.cancelNotified, this.cancelObserved, this.databaseWait]) signal.init();
  }
}

/** The test signals of one worker's parts. */
export interface WorkerTestSignals {
  /** The claim chooser: its reads of which queues are limited (ClaimChooser). */
  claims: ClaimChooserTestSignals;
  /** The prune of old rows (Pruner); null for a worker that does not prune (`retention: false`). */
  pruner: PrunerTestSignals | null;
  /** The upkeep of history's day partitions (HistoryUpkeep), which every worker runs. */
  historyUpkeep: HistoryUpkeepTestSignals;
  /** The reclaim sweep (Reclaimer). */
  reclaimer: ReclaimerTestSignals;
  /** The cron passes (CronScheduler); null for a worker with no schedules, or with `schedules: false`. */
  scheduler: CronSchedulerTestSignals | null;
  /** The worker's own loop: claims, late answers, cancels, the wait for the database. */
  worker: WorkerLoopTestSignals;
}

const byWorker = new WeakMap<object, WorkerTestSignals>();

/** Called by a worker as it is made. */
export function registerTestSignals(worker: object, signals: WorkerTestSignals): void {
  byWorker.set(worker, signals);
}

/**
 * For tests: `worker`'s test signals, switched on (each `init()` called).
 * Call it before the point to wait for can happen (before `start()` to see
 * every sweep).
 */
export function workerTestSignals(worker: object): WorkerTestSignals {
  const signals = byWorker.get(worker);
  if (signals === undefined) throw new Error("not a worker: no test signals registered for it");
  signals.claims.init();
  signals.pruner?.init();
  signals.historyUpkeep.init();
  signals.reclaimer.init();
  signals.scheduler?.init();
  signals.worker.init();
  return signals;
}
