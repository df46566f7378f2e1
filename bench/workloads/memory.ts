import { now } from "../lib/clock.js";
import type { BenchConfig } from "../lib/config.js";
import { slope } from "../lib/stats.js";
import type { BenchSystem } from "../systems/system.js";
import { cappedBy, withFilledWorker } from "./process.js";

export interface MemoryResult {
  /** Jobs the worker handled before it finished or the cap ran out. */
  jobs: number;
  /** Least-squares slope of the worker's RSS over the jobs handled after warm-up, in MB per 100,000 jobs. */
  slopeMbPer100k: number;
  /** RSS (MB) at the first sample after warm-up, and at the last sample. */
  rssAfterWarmUpMb: number;
  rssAtEndMb: number;
  capped: boolean;
}

/**
 * Worker memory over a long run: `memoryJobs` jobs enqueued first, then
 * one worker process handles them; it records its resident set every
 * `memorySampleEvery` handler calls. A worker that keeps something per job
 * (a map that is never cleared, listeners, timers) shows as a slope that
 * does not flatten; the slope is fitted over the samples after
 * `memoryWarmupJobs` (or the second half of a run cut short by the cap),
 * once the heap has grown to its working size.
 */
export function memoryRun(system: BenchSystem, config: BenchConfig, tag: string): Promise<MemoryResult> {
  const total = config.memoryJobs;
  return withFilledWorker(system, "perJob", config, tag, total, async (worker) => {
    const deadline = now() + config.memoryCapMs;
    await worker.start({ milestones: [total], rssEvery: config.memorySampleEvery });
    const capped = await cappedBy(() => worker.milestone(total, deadline - now()));
    const { count, rss } = await worker.stop();
    // A run the cap cut short is fitted over its second half when it did
    // not get past the warm-up: a slow system still gets its slope.
    const warmUp = Math.min(config.memoryWarmupJobs, count / 2);
    const steady = rss.filter(([n]) => n > warmUp);
    if (steady.length < 3) throw new Error(`${count} jobs handled: too few RSS samples past the warm-up to fit a slope`);
    const mb = (kb: number) => kb / 1024;
    return {
      jobs: count,
      slopeMbPer100k: mb(slope(steady) * 100_000),
      rssAfterWarmUpMb: mb(steady[0]![1]),
      rssAtEndMb: mb(steady.at(-1)![1]),
      capped,
    };
  });
}
