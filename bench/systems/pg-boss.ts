import { type JobResult, PgBoss } from "pg-boss";
import { chunkRanges } from "../lib/chunks.js";
import { analyzeDatabase, createDatabase } from "../lib/postgres.js";
import { type BenchSystem, type Payload, PRESSURE_CONCURRENCY, type StartWorker } from "./system.js";

const QUEUE = "bench";
/** Per-job handlers: this many workers, each fetching one job at a time (`batchSize` 1). */
const LOCAL_CONCURRENCY = 20;
/** The array handler: one worker fetching (and completing) 500 jobs per round trip. */
const ARRAY_BATCH_SIZE = 500;
/**
 * The batch variant (workloads/batch.ts): work() with perJobResults, the
 * handler returning one { id, status: "completed" } per job, which pg-boss
 * settles in one statement per status; BATCH_WORKERS workers fetching
 * BATCH_SIZE jobs each, so that one fetches while the others' batches run
 * and complete, back to back while fetches come back full
 * (burstWhenBatchFull). (BENCH_PGBOSS_BATCH_SIZE and
 * BENCH_PGBOSS_BATCH_WORKERS override them, for tuning.)
 */
const BATCH_SIZE = Number(process.env.BENCH_PGBOSS_BATCH_SIZE ?? 500);
const BATCH_WORKERS = Number(process.env.BENCH_PGBOSS_BATCH_WORKERS ?? 4);
/** The flow resolver's polling interval for the workflows: its minimum (flowIntervalSeconds). */
const FLOW_INTERVAL_SECONDS = 1;
/** Finished jobs written per statement by `fillFinished`. */
const FINISHED_CHUNK = 100_000;
/**
 * $1 count, $2 queue name: that many jobs as pg-boss leaves a completed one
 * (kept until its queue's deletion time, seven days by default), in the
 * queue's partition.
 */
const FILL_FINISHED = `
INSERT INTO pgboss.job (name, data, state, created_on, start_after, started_on, completed_on)
SELECT $2::text, jsonb_build_object('n', g), 'completed', now() - interval '1 hour', now() - interval '1 hour',
       now() - interval '1 hour', now() - interval '1 hour'
FROM generate_series(1, $1::int) AS g`;

/**
 * A pg-boss instance. The bench's client and the latency worker use
 * LISTEN/NOTIFY (the queue is created with `notify: true`), so a sent job
 * wakes an idle worker at once. Throughput workers do not: with NOTIFY active
 * an idle per-job worker waits `notifyPollingIntervalSeconds` (30 s) between
 * fetches and never bursts (measured here: 2 jobs/s). They poll, and keep
 * fetching back to back ("burst") while the queue's ready count, refreshed
 * every second by the supervisor, shows jobs waiting.
 */
function boss(url: string, role: "client" | "throughput" | "latency" | "workflow"): PgBoss {
  const instance = new PgBoss({
    connectionString: url,
    schedule: false,
    max: 25,
    useListenNotify: role !== "throughput" && role !== "workflow",
    // Dependents are released by a resolver that polls, not by the completion:
    // its shortest interval for the workflows.
    ...(role === "workflow" ? { flowIntervalSeconds: FLOW_INTERVAL_SECONDS } : {}),
    ...(role === "throughput" || role === "workflow"
      ? { supervise: true, superviseIntervalSeconds: 1, monitorIntervalSeconds: 1, queueCacheIntervalSeconds: 1 }
      : { supervise: false }),
  });
  instance.on("error", (error) => console.error(`pg-boss: ${(error as Error).message}`));
  return instance;
}

export const system: BenchSystem = {
  name: "pg-boss",
  fillsFinished: true,
  batchHandlers: true,
  settings: {
    worker: `per-job handlers: work() with batchSize 1, localConcurrency ${LOCAL_CONCURRENCY}, pollingIntervalSeconds 0.5 (its minimum), burstWhenReadyExceeds 1 with the ready count refreshed every second (superviseIntervalSeconds, monitorIntervalSeconds, queueCacheIntervalSeconds 1); array handler: batchSize ${ARRAY_BATCH_SIZE}, burstWhenBatchFull`,
    batch: `work() with perJobResults (one { id, status: "completed" } per job), batchSize ${BATCH_SIZE}, localConcurrency ${BATCH_WORKERS}, burstWhenBatchFull, pollingIntervalSeconds 0.5, the supervisor settings above`,
    pressure: `the per-job handlers above with localConcurrency ${PRESSURE_CONCURRENCY}`,
    latency: "queue created with notify: true, useListenNotify true (an idle worker is woken by NOTIFY; with it on, the throughput workers above stall, so they poll)",
    client: "pool max 25 (worker and client)",
    enqueue: "send() one at a time; insert() for batches",
    workflows: `flow() with the whole graph in one call; the per-job worker above, its flow resolver polling every ${FLOW_INTERVAL_SECONDS} s (flowIntervalSeconds, its minimum): pg-boss releases dependents there, not in the completion`,
  },
  async unavailable() {
    return null;
  },
  async open(tag, options = {}) {
    const db = await createDatabase(`pgboss_${tag}`, options.server);
    const client = boss(db.url, "client");
    await client.start();
    await client.createQueue(QUEUE, { notify: true });
    return {
      target: db.url,
      database: db.name,
      schema: "pgboss",
      jobTables: ["pgboss.job"],
      async enqueueOne(payload) {
        await client.send(QUEUE, payload);
      },
      async enqueueMany(payloads) {
        await client.insert(QUEUE, payloads.map((data) => ({ data })));
      },
      async fillFinished(count) {
        for (const [start, end] of chunkRanges(count, FINISHED_CHUNK)) await client.getDb().executeSql(FILL_FINISHED, [end - start, QUEUE]);
      },
      settle: () => analyzeDatabase(db.url),
      async unfinished() {
        const rows = await client.getDb().executeSql(
          "SELECT count(*)::int AS bench_poll FROM pgboss.job WHERE name = $1 AND state < 'completed'",
          [QUEUE],
        );
        return rows.rows[0].bench_poll;
      },
      async enqueueGraph(graph) {
        await client.flow(
          graph.dependsOn.map((dependsOn, n) => ({
            ref: `n${n}`,
            name: QUEUE,
            data: { n },
            ...(dependsOn.length > 0 ? { dependsOn: dependsOn.map((d) => `n${d}`) } : {}),
          })),
        );
      },
      async close() {
        await client.stop({ graceful: false, close: true });
        await db.drop();
      },
    };
  },
};

export const startWorker: StartWorker = async (target, variant, onJob) => {
  const client = boss(target, variant === "latency" ? "latency" : variant === "workflow" ? "workflow" : "throughput");
  await client.start();
  if (variant === "batch") {
    await client.work<Payload>(
      QUEUE,
      { batchSize: BATCH_SIZE, localConcurrency: BATCH_WORKERS, burstWhenBatchFull: true, pollingIntervalSeconds: 0.5, perJobResults: true },
      async (jobs) => {
        for (const job of jobs) onJob(job.data);
        return jobs.map((job): JobResult => ({ id: job.id, status: "completed" }));
      },
    );
  } else if (variant === "array") {
    await client.work<Payload>(QUEUE, { batchSize: ARRAY_BATCH_SIZE, burstWhenBatchFull: true, pollingIntervalSeconds: 0.5 }, async (jobs) => {
      for (const job of jobs) onJob(job.data);
    });
  } else {
    await client.work<Payload>(
      QUEUE,
      { batchSize: 1, localConcurrency: variant === "pressure" ? PRESSURE_CONCURRENCY : LOCAL_CONCURRENCY, pollingIntervalSeconds: 0.5, burstWhenReadyExceeds: 1 },
      async ([job]) => {
        await onJob(job!.data);
      },
    );
  }
  return {
    async stop() {
      await client.stop({ graceful: true, close: true, timeout: 5_000 });
    },
  };
};
