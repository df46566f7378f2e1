import { Logger, makeWorkerUtils, run } from "graphile-worker";
import pg from "pg";
import { chunkRanges } from "../lib/chunks.js";
import { analyzeDatabase, createDatabase } from "../lib/postgres.js";
import { type BenchSystem, type Payload, PRESSURE_CONCURRENCY, type StartWorker } from "./system.js";

// The configuration graphile-worker's own performance page uses for its
// figures (worker.graphile.org/docs/performance): 24 concurrent jobs, a pool
// of 25, a local queue of 500 and batched completion and failure.
const CONCURRENCY = 24;
const MAX_POOL_SIZE = 25;
const LOCAL_QUEUE_SIZE = 500;
const COMPLETE_JOB_BATCH_DELAY = 0;

/**
 * The batch variant (workloads/batch.ts): graphile-worker's batch jobs, its
 * documented way to take many payloads in one task call: a job whose
 * payload is an array (what `jobKey` in `preserve_run_at` mode builds by
 * appending), its task returning one outcome per entry; when some reject,
 * the job is retried holding only those entries. Written straight as jobs of
 * BATCH_ITEMS payloads each (addJobs), each payload counted as one job.
 * The worker's settings are the per-job ones above. (BENCH_GRAPHILE_BATCH_ITEMS
 * overrides it, for tuning.)
 */
const BATCH_ITEMS = Number(process.env.BENCH_GRAPHILE_BATCH_ITEMS ?? 500);

const silent = new Logger(() => () => {});

export const system: BenchSystem = {
  name: "graphile-worker",
  batchHandlers: true,
  settings: {
    worker: `concurrency ${CONCURRENCY}, maxPoolSize ${MAX_POOL_SIZE}, localQueue.size ${LOCAL_QUEUE_SIZE}, completeJobBatchDelay ${COMPLETE_JOB_BATCH_DELAY}, failJobBatchDelay ${COMPLETE_JOB_BATCH_DELAY} (its documented performance configuration)`,
    enqueue: "addJob() one at a time; addJobs() for batches",
    pressure: `concurrency ${PRESSURE_CONCURRENCY}, the rest as above`,
    batch: `batch jobs: addJobs() of jobs whose payload is an array of ${BATCH_ITEMS} payloads, the task returning one outcome per entry; the worker settings above`,
  },
  async unavailable() {
    return null;
  },
  async open(tag, options = {}) {
    const db = await createDatabase(`graphile_${tag}`, options.server);
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
      database: db.name,
      schema: "graphile_worker",
      jobTables: ["graphile_worker._private_jobs"],
      async enqueueOne(payload) {
        await utils.addJob("noop", payload);
      },
      async enqueueMany(payloads) {
        await utils.addJobs(payloads.map((payload) => ({ identifier: "noop", payload })));
      },
      async enqueueBatchJobs(payloads) {
        const jobs = [];
        for (const [start, end] of chunkRanges(payloads.length, BATCH_ITEMS)) jobs.push({ identifier: "noop", payload: payloads.slice(start, end) });
        await utils.addJobs(jobs);
      },
      settle: () => analyzeDatabase(db.url),
      async unfinished() {
        // Finished jobs are deleted; anything left is waiting or running.
        const rows = await utils.withPgClient((client) => client.query("SELECT count(*)::int AS bench_poll FROM graphile_worker._private_jobs"));
        return rows.rows[0].bench_poll;
      },
      async unfinishedItems() {
        // Each entry of a batch job counts (a partly failed one is retried holding only its failed entries).
        const rows = await utils.withPgClient((client) =>
          client.query(
            "SELECT coalesce(sum(CASE WHEN json_typeof(payload) = 'array' THEN json_array_length(payload) ELSE 1 END), 0)::int AS bench_poll FROM graphile_worker._private_jobs",
          ),
        );
        return rows.rows[0].bench_poll;
      },
      async close() {
        await utils.release();
        await pool.end();
        await db.drop();
      },
    };
  },
};

export const startWorker: StartWorker = async (target, variant, onJob) => {
  const runner = await run({
    connectionString: target,
    concurrency: variant === "pressure" ? PRESSURE_CONCURRENCY : CONCURRENCY,
    maxPoolSize: MAX_POOL_SIZE,
    noHandleSignals: true,
    logger: silent,
    taskList: {
      noop: async (payload) => {
        if (!Array.isArray(payload)) {
          await onJob(payload as Payload);
          return;
        }
        // A batch job: one outcome per entry (were some to reject, the job would be retried holding only those).
        for (const entry of payload) onJob(entry as Payload);
        return payload.map(() => undefined);
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
