import { now } from "../lib/clock.js";
import type { BenchConfig } from "../lib/config.js";
import type { BenchSystem, Payload } from "../systems/system.js";

const WARM_UP = 50;

/**
 * Workload 1: `callers` loops in one process, each enqueuing one job at a
 * time and awaiting it, for `enqueueSingleMs` together. Jobs/s over all
 * callers. One caller is the workload; several, as the request
 * handlers of a busy API would, show whether durable single enqueues share
 * the server's commits (group commit) or queue behind each other.
 */
export async function enqueueOneAtATime(system: BenchSystem, config: BenchConfig, tag: string, callers: number): Promise<number> {
  const instance = await system.open(tag);
  try {
    let n = 0;
    const loops = (body: () => Promise<void>) => Promise.all(Array.from({ length: callers }, body));
    // Every caller warms up its own connection, not only the first.
    await loops(async () => {
      for (let i = 0; i < Math.ceil(WARM_UP / callers); i++) await instance.enqueueOne({ n: n++ });
    });
    const started = now();
    let count = 0;
    await loops(async () => {
      while (now() - started < config.enqueueSingleMs) {
        await instance.enqueueOne({ n: n++ });
        count++;
      }
    });
    return (count * 1000) / (now() - started);
  } finally {
    await instance.close();
  }
}

/** Workload 2: enqueue `enqueueBatchTotal` jobs in calls of `batchSize` (or all in one call). Jobs/s. */
export async function enqueueBatch(system: BenchSystem, config: BenchConfig, tag: string, oneCall: boolean): Promise<number> {
  const instance = await system.open(tag);
  try {
    const total = config.enqueueBatchTotal;
    const size = oneCall ? total : config.batchSize;
    const batches: Payload[][] = [];
    for (let start = 0; start < total; start += size) {
      batches.push(Array.from({ length: Math.min(size, total - start) }, (_, i) => ({ n: start + i })));
    }
    // One small batch first, so connections are open and statements prepared.
    await instance.enqueueMany(Array.from({ length: 10 }, (_, i) => ({ n: -1 - i })));
    const started = now();
    for (const batch of batches) await instance.enqueueMany(batch);
    return (total * 1000) / (now() - started);
  } finally {
    await instance.close();
  }
}

/** Enqueue `count` jobs in chunks (the fill before a processing run). Returns jobs/s. */
export async function fill(enqueueMany: (payloads: Payload[]) => Promise<void>, count: number, chunk: number): Promise<number> {
  const started = now();
  for (let start = 0; start < count; start += chunk) {
    await enqueueMany(Array.from({ length: Math.min(chunk, count - start) }, (_, i) => ({ n: start + i })));
  }
  return (count * 1000) / (now() - started);
}
