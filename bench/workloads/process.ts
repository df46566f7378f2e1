import { now, sleep } from "../lib/clock.js";
import type { BenchConfig } from "../lib/config.js";
import { percentile } from "../lib/stats.js";
import { DeadlineError, WorkerProcess } from "../lib/worker-process.js";
import type { BenchSystem, SystemInstance, WorkerVariant } from "../systems/system.js";
import { fill } from "./enqueue.js";

export interface ProcessResult {
  /** Jobs/s from the worker's start until every job is finished (written back), or over the cap. */
  rate: number;
  /** Jobs/s from the first handler call until every job is finished. */
  rateFromFirstJob: number;
  peakRssMb: number;
  /** CPU time of the worker process per job processed (µs), start to stop. */
  cpuUsPerJob: number;
  capped: boolean;
}

/**
 * A fresh store filled with `jobs` jobs and settled, and one worker process
 * of `variant` spawned on it (libraries loaded, not started), for `body`.
 * The worker, unless `body` stopped it, and the store are cleaned up
 * whatever happens.
 */
export async function withFilledWorker<T>(
  system: BenchSystem,
  variant: WorkerVariant,
  config: BenchConfig,
  tag: string,
  jobs: number,
  body: (worker: WorkerProcess, instance: SystemInstance) => Promise<T>,
): Promise<T> {
  const instance = await system.open(tag);
  let worker: WorkerProcess | null = null;
  try {
    await fill((p) => instance.enqueueMany(p), jobs, config.fillChunk);
    await instance.settle();
    worker = await WorkerProcess.spawn(system.name, variant, instance.target);
    return await body(worker, instance);
  } finally {
    worker?.kill();
    await instance.close();
  }
}

/** Runs `wait`; true when it ran into its deadline (a DeadlineError), false when it finished. */
export async function cappedBy(wait: () => Promise<unknown>): Promise<boolean> {
  try {
    await wait();
    return false;
  } catch (error) {
    if (!(error instanceof DeadlineError)) throw error;
    return true;
  }
}

/**
 * Workload 3: `processJobs` jobs enqueued first, then one worker process
 * started; the clock runs from the moment the child is told to start its
 * worker (libraries already loaded) until the database (or Redis) shows no
 * job left unfinished. Peak RSS is the child's own maximum resident set.
 */
export function processAll(system: BenchSystem, variant: WorkerVariant, config: BenchConfig, tag: string): Promise<ProcessResult> {
  const total = config.processJobs;
  return withFilledWorker(system, variant, config, tag, total, async (worker, instance) => {
    const started = now();
    const deadline = started + config.processCapMs;
    await worker.start({ milestones: [1, total] });
    const capped = await cappedBy(async () => {
      await worker.milestone(total, deadline - now());
      await untilNoneLeft(instance, deadline);
    });
    const finishedAt = now();
    const finished = capped ? total - (await instance.unfinished()) : total;
    const firstJob = await worker.milestone(1, 1_000).catch(() => started);
    const { peakRssMb, cpuMs, count } = await worker.stop();
    return {
      cpuUsPerJob: (cpuMs * 1000) / Math.max(1, count),
      rate: (finished * 1000) / (finishedAt - started),
      rateFromFirstJob: (finished * 1000) / (finishedAt - firstJob),
      peakRssMb,
      capped,
    };
  });
}

/** Poll until no job is left unfinished; throws a DeadlineError at the deadline. */
async function untilNoneLeft(instance: SystemInstance, deadline: number): Promise<void> {
  while ((await instance.unfinished()) > 0) {
    if (now() >= deadline) throw new DeadlineError("jobs left at the deadline");
    await sleep(5);
  }
}

export interface LatencyResult {
  p50: number;
  p95: number;
  p99: number;
  received: number;
}

/**
 * Workload 4: an idle worker; `latencyJobs` jobs enqueued one by one,
 * `latencyGapMs` apart. Latency is from just before the enqueue call to the
 * start of the handler in the worker process (clocks calibrated over IPC).
 */
export async function latency(system: BenchSystem, config: BenchConfig, tag: string): Promise<LatencyResult> {
  const instance = await system.open(tag);
  let worker: WorkerProcess | null = null;
  try {
    worker = await WorkerProcess.spawn(system.name, "latency", instance.target);
    await worker.start({ recordStarts: true });
    await sleep(1_000); // let it go idle: first fetch done, listening
    const enqueuedAt = new Map<number, number>();
    const origin = now();
    for (let n = 0; n < config.latencyJobs; n++) {
      const t = now();
      enqueuedAt.set(n, t);
      await instance.enqueueOne({ n, t });
      const wait = origin + (n + 1) * config.latencyGapMs - now();
      if (wait > 0) await sleep(wait);
    }
    const deadline = now() + 10_000;
    while ((await worker.progress()).count < config.latencyJobs && now() < deadline) await sleep(50);
    const { starts } = await worker.stop();
    worker = null;
    const latencies = starts.filter(([n]) => enqueuedAt.has(n)).map(([n, t]) => t - enqueuedAt.get(n)!);
    if (latencies.length === 0) throw new Error("no job started");
    return { p50: percentile(latencies, 50), p95: percentile(latencies, 95), p99: percentile(latencies, 99), received: latencies.length };
  } finally {
    worker?.kill();
    await instance.close();
  }
}

/**
 * The steady processing rate of a fresh worker process over handler counts
 * `window[0]`..`window[1]` (leaving out start-up and, with few jobs waiting,
 * the drain at the end), or over what it reached when the cap ran out.
 */
export async function windowRate(system: BenchSystem, target: string, window: [number, number], capMs: number): Promise<{ rate: number; capped: boolean }> {
  const worker = await WorkerProcess.spawn(system.name, "perJob", target);
  try {
    const deadline = now() + capMs;
    await worker.start({ milestones: window });
    const from = await worker.milestone(window[0], deadline - now());
    try {
      const to = await worker.milestone(window[1], deadline - now());
      return { rate: ((window[1] - window[0]) * 1000) / (to - from), capped: false };
    } catch (error) {
      if (!(error instanceof DeadlineError)) throw error;
      const { count, t } = await worker.progress();
      return { rate: ((count - window[0]) * 1000) / (t - from), capped: true };
    }
  } finally {
    await worker.stop().catch(() => worker.kill());
  }
}

/** Workload 5, few waiting: a fresh store with `scaleSmall` jobs; the rate over `windowSmall`. */
export async function scaleSmall(system: BenchSystem, config: BenchConfig, tag: string): Promise<{ rate: number; capped: boolean }> {
  const instance = await system.open(tag);
  try {
    await fill((p) => instance.enqueueMany(p), config.scaleSmall, config.fillChunk);
    await instance.settle();
    return await windowRate(system, instance.target, config.windowSmall, config.scaleCapMs);
  } finally {
    await instance.close();
  }
}

/**
 * Workload 5, many waiting: one store filled with `scaleLarge` jobs, then
 * `runs` fresh worker processes in turn, each measured over `windowLarge`
 * (each takes at most windowLarge[1] jobs, so well over 90% stay waiting).
 */
export async function scaleLarge(
  system: BenchSystem,
  config: BenchConfig,
  tag: string,
  onFill: (jobsPerSecond: number) => void,
): Promise<Array<{ rate: number; capped: boolean } | Error>> {
  const instance = await system.open(tag);
  try {
    onFill(await fill((p) => instance.enqueueMany(p), config.scaleLarge, config.fillChunk));
    await instance.settle();
    const results: Array<{ rate: number; capped: boolean } | Error> = [];
    for (let run = 0; run < config.runs; run++) {
      results.push(await windowRate(system, instance.target, config.windowLarge, config.scaleCapMs).catch((error: Error) => error));
    }
    return results;
  } finally {
    await instance.close();
  }
}

/**
 * Workload 5, finished jobs kept: one store holding `finishedKept` succeeded
 * jobs (written straight into the store), then `runs` fresh worker
 * processes in turn, each with the queue topped up to `scaleSmall` waiting,
 * the store settled, and measured over `windowSmall`, as processAt10k. Only
 * systems that keep finished jobs where they claim from (`fillsFinished`)
 * take part; for the others (graphile-worker deletes a job once it
 * succeeds) the result is empty.
 */
export async function scaleFinished(system: BenchSystem, config: BenchConfig, tag: string): Promise<Array<{ rate: number; capped: boolean } | Error>> {
  const instance = await system.open(tag);
  try {
    if (!instance.fillFinished) return []; // not measured: shown as — in the table
    await instance.fillFinished(config.finishedKept);
    const results: Array<{ rate: number; capped: boolean } | Error> = [];
    for (let run = 0; run < config.runs; run++) {
      await fill((p) => instance.enqueueMany(p), config.scaleSmall - (await instance.unfinished()), config.fillChunk);
      await instance.settle();
      results.push(await windowRate(system, instance.target, config.windowSmall, config.scaleCapMs).catch((error: Error) => error));
    }
    return results;
  } finally {
    await instance.close();
  }
}
