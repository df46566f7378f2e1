/**
 * `conveyor-jobs/testing`: helpers for testing your own jobs (docs/testing.md).
 *
 * - `runHandler` / `startHandler`: call a handler in a unit test, with no
 *   database, and observe its signal, progress, logs and outcome; simulate
 *   a cancel, a timeout, a lost lease or a shutdown.
 * - `createTestConveyor`: a Conveyor on a fresh schema, with `drain()` to
 *   run every ready job now (durable jobs woken by their time or an event
 *   included), `advanceTime(ms)` for sleeps, waits and delays, and
 *   `expectEnqueued` / `expectNotEnqueued`.
 *
 * Nothing here depends on a test runner: assertions throw node's
 * `AssertionError`, which vitest, jest, mocha and `node --test` all report.
 */
export { type HandlerOutcome, type HandlerResult, type HandlerRun, runHandler, type RunHandlerOptions, startHandler } from "./run-handler.js";
export {
  createTestConveyor,
  DEFAULT_DRAIN_TIMEOUT_MS,
  DRAIN_SLEEP_HORIZON_MS,
  type DrainOptions,
  type DrainResult,
  type EndedAttempt,
  TestConveyor,
  type TestConveyorOptions,
} from "./test-conveyor.js";
export { type JobMatch, partialMatch } from "./expect-job.js";
export type { TestEvent, TestStepRecord } from "./memory-durable.js";
export { type BatchJobResult, runBatchHandler, type RunBatchHandlerOptions } from "./run-batch-handler.js";
