import { type AnyJobDefinition, Conveyor, defineJob } from "conveyor";
import pino from "pino";
import { z } from "zod";
import { analyzeDatabase, createDatabase } from "../lib/postgres.js";
import type { BenchSystem, Payload, StartWorker, SystemInstance } from "./system.js";

/**
 * Worker settings for throughput: enough slots that the database, not the
 * slots, is the limit, claimed in batches of that size. (BENCH_CONVEYOR_CONCURRENCY
 * and BENCH_CONVEYOR_CLAIM_BATCH override them, for profiling.)
 */
const CONCURRENCY = Number(process.env.BENCH_CONVEYOR_CONCURRENCY ?? 200);
const CLAIM_BATCH_SIZE = Number(process.env.BENCH_CONVEYOR_CLAIM_BATCH ?? CONCURRENCY);

const schema = z.object({ n: z.number(), t: z.number().optional() });

function noopJob(onJob: (payload: Payload) => void = () => {}): AnyJobDefinition {
  const job = defineJob({
    kind: "bench.noop",
    schema,
    handler: ({ payload }) => {
      onJob(payload);
    },
  });
  // A zod-typed definition is not assignable to AnyJobDefinition under strict
  // TypeScript (the schema's type parameter is measured as invariant), hence the cast.
  return job as unknown as AnyJobDefinition;
}

// Warnings and errors only: what a production worker would log.
const logger = () => pino({ level: "warn" });

export const system: BenchSystem = {
  name: "conveyor",
  settings: {
    worker: `concurrency ${CONCURRENCY}, claimBatchSize ${CLAIM_BATCH_SIZE}, listen on (LISTEN/NOTIFY), other options at their defaults (lease 60 s, heartbeat 20 s, poll 1 s)`,
    client: "pool of 10 (default); payload validated by a zod schema, as an application would",
    enqueue: "enqueue() one at a time; enqueueMany() for batches",
  },
  async unavailable() {
    return null;
  },
  async open(tag) {
    const db = await createDatabase(`conveyor_${tag}`);
    const job = noopJob();
    const conveyor = new Conveyor({ connectionString: db.url, jobs: [job], logger: logger() });
    await conveyor.migrate();
    const instance: SystemInstance = {
      target: db.url,
      async enqueueOne(payload) {
        await conveyor.enqueue(job, payload);
      },
      async enqueueMany(payloads) {
        await conveyor.enqueueMany(payloads.map((payload) => ({ job, payload })));
      },
      settle: () => analyzeDatabase(db.url),
      async unfinished() {
        const { rows } = await conveyor.pool.query("SELECT count(*)::int AS n FROM conveyor.jobs WHERE status IN ('queued', 'retrying', 'running')");
        return rows[0].n;
      },
      async close() {
        await conveyor.close();
        await db.drop();
      },
    };
    return instance;
  },
};

export const startWorker: StartWorker = async (target, _variant, onJob) => {
  const conveyor = new Conveyor({ connectionString: target, jobs: [noopJob(onJob)], logger: logger() });
  const worker = conveyor.worker({ concurrency: CONCURRENCY, claimBatchSize: CLAIM_BATCH_SIZE });
  await worker.start();
  return {
    async stop() {
      await worker.stop();
      await conveyor.close();
    },
  };
};
