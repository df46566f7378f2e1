import type { SystemName } from "../systems/system.js";

/** Sizes and time bounds of one bench invocation (`--quick` shrinks them). */
export interface BenchConfig {
  quick: boolean;
  /** Runs per figure; each figure is the median with min–max. */
  runs: number;
  systems: SystemName[];
  workloads: WorkloadName[];
  /** Workload 1: enqueue one at a time, awaited, for this long (alone, and from `concurrentCallers` callers at once). */
  enqueueSingleMs: number;
  concurrentCallers: number;
  /** Workload 2: jobs enqueued in batches of `batchSize`, and in one call. */
  enqueueBatchTotal: number;
  batchSize: number;
  /** Workload 3: pre-enqueued jobs processed by one worker process, within a time cap. */
  processJobs: number;
  processCapMs: number;
  /** Workload 4: jobs enqueued `latencyGapMs` apart to an idle worker. */
  latencyJobs: number;
  latencyGapMs: number;
  /** Workload 5: processing rate with this many jobs waiting (large: 0 skips it). */
  scaleSmall: number;
  scaleLarge: number;
  /** Handler counts between which the steady rate is measured, with few and with many waiting. */
  windowSmall: [number, number];
  windowLarge: [number, number];
  scaleCapMs: number;
  /** Workload 5, finished kept: succeeded jobs in the store beside `scaleSmall` waiting (0 skips it). */
  finishedKept: number;
  /**
   * Memory: `memoryJobs` jobs through one worker process within
   * `memoryCapMs`, its RSS sampled every `memorySampleEvery` jobs; the
   * slope is fitted over the samples after `memoryWarmupJobs`.
   */
  memoryJobs: number;
  memoryCapMs: number;
  memorySampleEvery: number;
  memoryWarmupJobs: number;
  /** Jobs per enqueue call when filling a queue before a processing run. */
  fillChunk: number;
  /** Seconds of the single-INSERT loop that measures the server's insert limit. */
  insertLimitSeconds: number;
  /**
   * Workload 6, workflows (workloads/workflows.ts): a fan-in of this many
   * jobs into one, a chain of this many, and a graph of `workflowLayers`
   * layers of `workflowWidth` jobs, each job of a layer waiting on
   * `workflowLayerDependencies` jobs of the layer before; each graph within
   * `workflowCapMs` of its enqueue.
   */
  workflowFanIn: number;
  workflowChain: number;
  workflowLayers: number;
  workflowWidth: number;
  workflowLayerDependencies: number;
  workflowCapMs: number;
  /** Limits per key (Conveyor only): jobs waiting, over how many keys, and each phase's measured span. */
  keyLimitJobs: number;
  keyLimitKeys: number;
  keyLimitPhaseMs: number;
  /** The dashboard at scale (Conveyor only): jobs in the store, requests per endpoint, the live worker's jobs, and each phase with and without the bulk action. */
  dashboardJobs: number;
  dashboardRequests: number;
  dashboardLiveJobs: number;
  dashboardPhaseMs: number;
  /**
   * Durable execution (workloads/durable.ts): `durableJobs` jobs of
   * `durableSteps` no-op steps, and as many with none, each run within
   * `durableCapMs`; for the SIGKILL run, `durableResumeJobs` jobs of three
   * steps with a sleep of `durableResumeSleepMs` between two.
   */
  durableJobs: number;
  durableSteps: number;
  durableResumeJobs: number;
  durableResumeSleepMs: number;
  durableCapMs: number;
  /**
   * Batch handlers (workloads/batch.ts): `batchJobs` no-op jobs enqueued
   * first, then processed by one worker process in batches (and by
   * Conveyor's per-job handlers), each run within `batchCapMs`.
   */
  batchJobs: number;
  batchCapMs: number;
  /**
   * Batch sizes over keys (workloads/batch-keys.ts): per case,
   * `batchKeysJobs` jobs round-robin over that many keys through one worker
   * with batches of `batchKeysMaxSize`, handler calls of `batchKeysCallMs`
   * on average.
   */
  batchKeysJobs: number;
  batchKeysMaxSize: number;
  batchKeysMaxWaitMs: number;
  batchKeysCallMs: number;
  /** Durable-sleeping: `sleepingJobs` sleeping jobs in the store beside `sleepingWaiting` waiting, the rate measured over `windowLarge`. */
  sleepingJobs: number;
  sleepingWaiting: number;
  /**
   * Pressure (workloads/pressure.ts): `pressureRate` jobs/s of 1 ms jobs
   * offered to one worker of 64 slots, `pressurePhaseMs` per phase (clean,
   * held xmin, readers, overload at `pressureOverload` times the rate), then
   * a drain of at most `pressureDrainMs`; `pressureReaders` readers, each
   * pausing `pressureReaderPauseMs` between two scans.
   */
  pressureRate: number;
  pressureOverload: number;
  pressurePhaseMs: number;
  pressureDrainMs: number;
  pressureReaders: number;
  pressureReaderPauseMs: number;
}

export const WORKLOAD_NAMES = [
  "insert-limit",
  "enqueue-single",
  "enqueue-batch",
  "process",
  "latency",
  "scale",
  "memory",
  "workflows",
  "key-limits",
  "dashboard",
  "durable",
  "durable-sleeping",
  "batch",
  "batch-keys",
  "pressure",
] as const;
export type WorkloadName = (typeof WORKLOAD_NAMES)[number];

/** The batch-keys workload's settings, but for its jobs in quick mode. */
const BATCH_KEYS = {
  batchKeysJobs: 10_000,
  batchKeysMaxSize: 25,
  batchKeysMaxWaitMs: 200,
  batchKeysCallMs: 5,
} as const;

/** The pressure workload's settings, but for its phases' length in quick mode. */
const PRESSURE = {
  pressureRate: 1_000,
  pressureOverload: 1.5,
  pressurePhaseMs: 60_000,
  pressureDrainMs: 120_000,
  pressureReaders: 4,
  pressureReaderPauseMs: 50,
} as const;

export function configFor(quick: boolean): Omit<BenchConfig, "systems" | "workloads"> {
  return quick
    ? {
        quick,
        runs: 1,
        enqueueSingleMs: 1_500,
        concurrentCallers: 8,
        enqueueBatchTotal: 20_000,
        batchSize: 1_000,
        processJobs: 10_000,
        processCapMs: 10_000,
        latencyJobs: 150,
        latencyGapMs: 10,
        scaleSmall: 10_000,
        scaleLarge: 0,
        windowSmall: [1_000, 9_000],
        windowLarge: [5_000, 45_000],
        scaleCapMs: 8_000,
        finishedKept: 50_000,
        memoryJobs: 200_000,
        memoryCapMs: 30_000,
        memorySampleEvery: 5_000,
        memoryWarmupJobs: 50_000,
        fillChunk: 10_000,
        insertLimitSeconds: 3,
        workflowFanIn: 2_000,
        workflowChain: 500,
        workflowLayers: 20,
        workflowWidth: 50,
        workflowLayerDependencies: 3,
        workflowCapMs: 30_000,
        keyLimitJobs: 500_000,
        keyLimitKeys: 10_000,
        keyLimitPhaseMs: 2_000,
        dashboardJobs: 300_000,
        dashboardRequests: 20,
        dashboardLiveJobs: 200_000,
        dashboardPhaseMs: 2_000,
        durableJobs: 500,
        durableSteps: 10,
        durableResumeJobs: 200,
        durableResumeSleepMs: 200,
        durableCapMs: 30_000,
        sleepingJobs: 100_000,
        sleepingWaiting: 50_000,
        batchJobs: 10_000,
        batchCapMs: 10_000,
        ...BATCH_KEYS,
        batchKeysJobs: 5_000,
        ...PRESSURE,
        pressurePhaseMs: 15_000,
      }
    : {
        quick,
        runs: 3,
        enqueueSingleMs: 5_000,
        concurrentCallers: 8,
        enqueueBatchTotal: 100_000,
        batchSize: 1_000,
        processJobs: 50_000,
        processCapMs: 30_000,
        latencyJobs: 500,
        latencyGapMs: 10,
        scaleSmall: 10_000,
        scaleLarge: 1_000_000,
        windowSmall: [1_000, 9_000],
        windowLarge: [5_000, 45_000],
        scaleCapMs: 20_000,
        finishedKept: 1_000_000,
        memoryJobs: 2_000_000,
        memoryCapMs: 150_000,
        memorySampleEvery: 20_000,
        memoryWarmupJobs: 200_000,
        fillChunk: 10_000,
        insertLimitSeconds: 10,
        workflowFanIn: 10_000,
        workflowChain: 10_000,
        workflowLayers: 100,
        workflowWidth: 100,
        workflowLayerDependencies: 3,
        workflowCapMs: 120_000,
        keyLimitJobs: 1_000_000,
        keyLimitKeys: 10_000,
        keyLimitPhaseMs: 4_000,
        dashboardJobs: 10_000_000,
        dashboardRequests: 100,
        dashboardLiveJobs: 4_000_000,
        dashboardPhaseMs: 8_000,
        durableJobs: 1_000,
        durableSteps: 10,
        durableResumeJobs: 500,
        durableResumeSleepMs: 200,
        durableCapMs: 60_000,
        sleepingJobs: 1_000_000,
        sleepingWaiting: 50_000,
        batchJobs: 50_000,
        batchCapMs: 20_000,
        ...BATCH_KEYS,
        ...PRESSURE,
      };
}
