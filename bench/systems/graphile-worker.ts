import { Logger, makeWorkerUtils, run } from "graphile-worker";
import pg from "pg";
import { analyzeDatabase, createDatabase } from "../lib/postgres.js";
import type { BenchSystem, Payload, StartWorker } from "./system.js";

// The configuration graphile-worker's own performance page uses for its
// figures (worker.graphile.org/docs/performance): 24 concurrent jobs, a pool
// of 25, a local queue of 500 and batched completion and failure.
const CONCURRENCY = 24;
const MAX_POOL_SIZE = 25;
const LOCAL_QUEUE_SIZE = 500;
const COMPLETE_JOB_BATCH_DELAY = 0;

const silent = new Logger(() => () => {});

export const system: BenchSystem = {
  name: "graphile-worker",
  settings: {
    worker: `concurrency ${CONCURRENCY}, maxPoolSize ${MAX_POOL_SIZE}, localQueue.size ${LOCAL_QUEUE_SIZE}, completeJobBatchDelay ${COMPLETE_JOB_BATCH_DELAY}, failJobBatchDelay ${COMPLETE_JOB_BATCH_DELAY} (its documented performance configuration)`,
    enqueue: "addJob() one at a time; addJobs() for batches",
  },
  async unavailable() {
    return null;
  },
  async open(tag) {
    const db = await createDatabase(`graphile_${tag}`);
    // A pool of our own, ended before the database is dropped: with the pool
    // graphile-worker makes, release() could return while a client was still
    // connected, and the drop's termination of it was an unhandled 'error'
    // that ended the bench.
    const pool = new pg.Pool({ connectionString: db.url });
    pool.on("error", () => {});
    // graphile-worker checks for this handler too, and warns on every connect without it.
    pool.on("connect", (client) => client.on("error", () => {}));
    const utils = await makeWorkerUtils({ pgPool: pool, logger: silent });
    await utils.migrate();
    return {
      target: db.url,
      async enqueueOne(payload) {
        await utils.addJob("noop", payload);
      },
      async enqueueMany(payloads) {
        await utils.addJobs(payloads.map((payload) => ({ identifier: "noop", payload })));
      },
      settle: () => analyzeDatabase(db.url),
      async unfinished() {
        // Finished jobs are deleted; anything left is waiting or running.
        const rows = await utils.withPgClient((client) => client.query("SELECT count(*)::int AS n FROM graphile_worker._private_jobs"));
        return rows.rows[0].n;
      },
      async close() {
        await utils.release();
        await pool.end();
        await db.drop();
      },
    };
  },
};

export const startWorker: StartWorker = async (target, _variant, onJob) => {
  const runner = await run({
    connectionString: target,
    concurrency: CONCURRENCY,
    maxPoolSize: MAX_POOL_SIZE,
    noHandleSignals: true,
    logger: silent,
    taskList: {
      noop: async (payload) => {
        onJob(payload as Payload);
      },
    },
    preset: {
      worker: {
        localQueue: { size: LOCAL_QUEUE_SIZE },
        completeJobBatchDelay: COMPLETE_JOB_BATCH_DELAY,
        failJobBatchDelay: COMPLETE_JOB_BATCH_DELAY,
      },
    },
  });
  return {
    async stop() {
      await runner.stop();
    },
  };
};
