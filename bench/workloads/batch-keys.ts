import { type AnyJobDefinition, Conveyor, defineJob } from "conveyor-jobs";
import pino from "pino";
import pg from "pg";
import { z } from "zod";
import { now, sleep } from "../lib/clock.js";
import { analyzeDatabase, createDatabase } from "../lib/postgres.js";

/**
 * Batch sizes over keys (docs/performance.md "Batch sizes over keys"),
 * Conveyor only: how full batches get under a backlog when `batch.key`
 * spreads the jobs over several keys. For each case, `jobs` jobs enqueued
 * round-robin over `keys` keys (the order in which every key's batch grows
 * in step with the others) into a fresh database and settled, then one
 * in-process worker of `concurrency` slots, from its start until the store
 * shows none unfinished. The batch handler waits half to one and a half
 * times `callMs` per call, in turn (a stand-in for one request to a batch
 * API, whose latency varies: batches end apart, and slots free a few at a
 * time), and returns one outcome per job. Reports the batches (handler
 * calls), their average size, the share of full ones and jobs per second.
 */
export interface BatchKeysCase {
  keys: number;
  concurrency: number;
}

export interface BatchKeysOptions {
  jobs: number;
  cases: readonly BatchKeysCase[];
  maxSize: number;
  maxWaitMs: number;
  callMs: number;
  log: (message: string) => void;
}

export interface BatchKeysResult extends BatchKeysCase {
  batches: number;
  averageSize: number;
  /** Batches that held `maxSize` jobs, over all batches. */
  fullShare: number;
  jobsPerSecond: number;
}

/** How long a case may take before it is given up. */
const CASE_CAP_MS = 60_000;

export async function batchKeysBench(options: BatchKeysOptions): Promise<BatchKeysResult[]> {
  const results: BatchKeysResult[] = [];
  for (const entry of options.cases) results.push(await batchKeysCase(entry, options));
  return results;
}

async function batchKeysCase({ keys, concurrency }: BatchKeysCase, options: BatchKeysOptions): Promise<BatchKeysResult> {
  const database = await createDatabase("batch_keys");
  const sizes: number[] = [];
  const job = defineJob({
    kind: "bench.batch-keys",
    schema: z.object({ key: z.string() }),
    batch: { maxSize: options.maxSize, maxWaitMs: options.maxWaitMs, key: (payload) => payload.key },
    async batchHandler({ jobs }) {
      sizes.push(jobs.length);
      await sleep(options.callMs * (0.5 + (sizes.length % 5) / 4));
      return jobs.map(() => null);
    },
  }) as unknown as AnyJobDefinition;
  const conveyor = new Conveyor({ connectionString: database.url, jobs: [job], logger: pino({ level: "silent" }), poolSize: 8 });
  const poll = new pg.Client({ connectionString: database.url, application_name: "conveyor-bench" });
  try {
    await conveyor.migrate();
    await conveyor.enqueueMany(Array.from({ length: options.jobs }, (_, i) => ({ job, payload: { key: `key-${i % keys}` } })));
    await analyzeDatabase(database.url);
    await poll.connect();
    const worker = conveyor.worker({ concurrency, claimBatchSize: Math.min(concurrency, 1_000) });
    const started = now();
    await worker.start();
    const unfinished = async () =>
      (await poll.query<{ n: number }>("SELECT /* bench_poll */ count(*)::int AS n FROM conveyor.jobs WHERE status <> 'succeeded'")).rows[0]!.n;
    while ((await unfinished()) > 0) {
      if (now() - started > CASE_CAP_MS) throw new Error(`${keys} keys: jobs left after ${CASE_CAP_MS / 1000} s`);
      await sleep(10);
    }
    const seconds = (now() - started) / 1000;
    await worker.stop();
    const handled = sizes.reduce((sum, size) => sum + size, 0);
    if (handled !== options.jobs) throw new Error(`${keys} keys: the handler saw ${handled} jobs, not ${options.jobs}`);
    const result = {
      keys,
      concurrency,
      batches: sizes.length,
      averageSize: handled / sizes.length,
      fullShare: sizes.filter((size) => size === options.maxSize).length / sizes.length,
      jobsPerSecond: options.jobs / seconds,
    };
    options.log(
      `  batch keys: ${keys} key${keys === 1 ? "" : "s"}, concurrency ${concurrency}: ${result.batches.toLocaleString("en-US")} batches, average ${result.averageSize.toFixed(1)} jobs, ` +
        `${Math.round(result.fullShare * 100)}% full, ${Math.round(result.jobsPerSecond).toLocaleString("en-US")} jobs/s`,
    );
    return result;
  } finally {
    await poll.end().catch(() => undefined);
    await conveyor.close();
    await database.drop();
  }
}
