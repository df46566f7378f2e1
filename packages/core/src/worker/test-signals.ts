import type { ReclaimerTestSignals } from "./reclaimer.js";

// Test signals of a worker's parts, reached from a worker without a public
// member: the worker registers them here when it is made, and a test asks
// for them by the worker. Not exported from the package.

/** The test signals of one worker's parts. */
export interface WorkerTestSignals {
  /** The reclaim sweep (Reclaimer). */
  reclaimer: ReclaimerTestSignals;
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
  signals.reclaimer.init();
  return signals;
}
