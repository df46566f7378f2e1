import { type AnyJobDefinition, Conveyor, defineJob, type FlowJob } from "conveyor-jobs";
import pino from "pino";
import { z } from "zod";
import { chunkRanges } from "../lib/chunks.js";
import { analyzeDatabase, createDatabase } from "../lib/postgres.js";
import { type BenchSystem, type Payload, PRESSURE_CONCURRENCY, type StartWorker, type SystemInstance, type WorkerVariant, type WorkflowGraph } from "./system.js";

/**
 * Worker settings for throughput: enough slots that the database, not the
 * slots, is the limit, claimed in batches of a quarter of them, so that a
 * claim is always in flight while the other batches run and are completed.
 * With one batch the size of every slot, the worker and the database take
 * turns, each idle while the other works. Batches of 500 rather than 200:
 * each statement costs the worker a write and a wake-up of the server
 * whatever its size, so larger batches leave more of both processes' time
 * to the jobs (see docs/performance.md). Holding 2,000 no-op jobs is what
 * graphile-worker's local queue of 500 does too: jobs fetched ahead of the
 * handlers that run them. (BENCH_CONVEYOR_CONCURRENCY and
 * BENCH_CONVEYOR_CLAIM_BATCH override them, for profiling.)
 */
const CONCURRENCY = Number(process.env.BENCH_CONVEYOR_CONCURRENCY ?? 2_000);
// The opt-in payload index of docs/operations.md ("Searching and counting"), to measure what it costs enqueues.
const PAYLOAD_INDEX = process.env.BENCH_CONVEYOR_PAYLOAD_INDEX === "1";
const CLAIM_BATCH_SIZE = Number(process.env.BENCH_CONVEYOR_CLAIM_BATCH ?? CONCURRENCY / 4);

/**
 * The batch variant (workloads/batch.ts): batches of BATCH_MAX_SIZE, sent
 * once that many are gathered or BATCH_MAX_WAIT_MS after the first; the
 * worker holds BATCH_CONCURRENCY jobs, claimed BATCH_CLAIM_SIZE at a time.
 * A claim the size of a batch fills one at once, so no batch waits out
 * its maxWaitMs while jobs are waiting, and four batches' worth of slots
 * keep a claim in flight while the others run and complete, as for the
 * per-job handlers above, whose claims are the same 500 jobs: the two
 * variants then differ in the handler alone. (BENCH_CONVEYOR_BATCH_SIZE, _BATCH_WAIT_MS,
 * _BATCH_CONCURRENCY and _BATCH_CLAIM override them, for tuning.)
 */
const BATCH_MAX_SIZE = Number(process.env.BENCH_CONVEYOR_BATCH_SIZE ?? 500);
const BATCH_MAX_WAIT_MS = Number(process.env.BENCH_CONVEYOR_BATCH_WAIT_MS ?? 50);
const BATCH_CONCURRENCY = Number(process.env.BENCH_CONVEYOR_BATCH_CONCURRENCY ?? BATCH_MAX_SIZE * 4);
const BATCH_CLAIM_SIZE = Number(process.env.BENCH_CONVEYOR_BATCH_CLAIM ?? BATCH_MAX_SIZE);

/** The pressure variant's slots, claimed a quarter at a time as above. */
const PRESSURE_SLOTS = { concurrency: PRESSURE_CONCURRENCY, claimBatchSize: PRESSURE_CONCURRENCY / 4 } as const;

const schema = z.object({ n: z.number(), t: z.number().optional() });
const durableSchema = z.object({ n: z.number(), steps: z.number(), sleepMs: z.number() });

/**
 * The durableResume variant's lease: a killed worker's running jobs are
 * reclaimed once their lease expires, so the lease bounds the time to
 * resume; swept every half second (the default lease is 60 s, swept every
 * 15 s).
 */
const RESUME_LEASE = { leaseMs: 2_000, reclaimIntervalMs: 500 } as const;

/** The no-op kind; `keepSucceeded` false for the notKept variant: each success deletes its job, as graphile-worker's does. */
function noopJob(onJob: (payload: Payload) => void | Promise<void> = () => {}, keepSucceeded = true): AnyJobDefinition {
  const job = defineJob({
    kind: "bench.noop",
    schema,
    handler: ({ payload }) => onJob(payload),
    ...(keepSucceeded ? {} : { retention: { keepSucceeded: false } }),
  });
  // A zod-typed definition is not assignable to AnyJobDefinition under strict
  // TypeScript (the schema's type parameter is measured as invariant), hence the cast.
  return job as unknown as AnyJobDefinition;
}

/**
 * The same kind as noopJob, taken in batches: a no-op batch handler that
 * returns one outcome (no result) per job, so each job is completed on its
 * own, behind its own execution id.
 */
function noopBatchJob(onJob: (payload: Payload) => void): AnyJobDefinition {
  const job = defineJob({
    kind: "bench.noop",
    schema,
    batch: { maxSize: BATCH_MAX_SIZE, maxWaitMs: BATCH_MAX_WAIT_MS },
    batchHandler: ({ jobs }) => {
      for (const { payload } of jobs) onJob(payload);
      return jobs.map(() => undefined);
    },
  });
  return job as unknown as AnyJobDefinition; // as noopJob
}

/**
 * `payload.steps` no-op steps, each returning a small JSON value, with a
 * sleep of `payload.sleepMs` between two steps when above 0. `onStep` is
 * called when a step's function runs (not when it is replayed).
 */
function durableJob(onStep: (payload: Payload) => void = () => {}): AnyJobDefinition {
  const job = defineJob({
    kind: "bench.durable",
    schema: durableSchema,
    handler: async ({ payload, step, sleep }) => {
      for (let i = 0; i < payload.steps; i++) {
        await step(`s${i}`, () => {
          onStep(payload);
          return { i };
        });
        if (payload.sleepMs > 0 && i < payload.steps - 1) await sleep(`z${i}`, payload.sleepMs);
      }
    },
  });
  return job as unknown as AnyJobDefinition; // as noopJob
}

/** Sleeping jobs written per statement by `fillSleeping`. */
const SLEEPING_CHUNK = 100_000;
/**
 * $1 count: that many durable jobs sleeping until three days from now, as a
 * sleep leaves them (attempt given back, no owner), without their sleep
 * records: the claim never reads those.
 */
const FILL_SLEEPING = `
INSERT INTO conveyor.jobs (id, tenant, queue, kind, payload, status, attempts, max_attempts, run_at, created_at, updated_at, started_at)
SELECT conveyor.uuid_v7(), 'default', 'default', 'bench.durable', jsonb_build_object('n', g, 'steps', 2, 'sleepMs', 259200000), 'sleeping', 0, 3,
       now() + interval '3 days', now(), now(), now()
FROM generate_series(1, $1::int) AS g`;

/** Finished jobs written per statement by `fillFinished`. */
const FINISHED_CHUNK = 100_000;
/** $1 count: that many succeeded jobs, each with its one succeeded execution. */
const FILL_FINISHED = `
WITH finished AS (
  INSERT INTO conveyor.jobs (id, tenant, queue, kind, payload, status, attempts, max_attempts, run_at,
                             created_at, updated_at, started_at, finished_at)
  SELECT conveyor.uuid_v7(), 'default', 'default', 'bench.noop', jsonb_build_object('n', g), 'succeeded', 1, 3,
         now() - interval '1 hour', now() - interval '1 hour', now() - interval '1 hour', now() - interval '1 hour', now() - interval '1 hour'
  FROM generate_series(1, $1::int) AS g
  RETURNING id, started_at, finished_at
)
INSERT INTO conveyor.job_executions (id, job_id, attempt, worker_id, started_at, finished_at, outcome)
SELECT conveyor.uuid_v7(), id, 1, 'bench-filler', started_at, finished_at, 'succeeded' FROM finished`;

// Warnings and errors only: what a production worker would log.
const logger = () => pino({ level: "warn" });

export const system: BenchSystem = {
  name: "conveyor",
  fillsFinished: true,
  batchHandlers: true,
  settings: {
    worker: `concurrency ${CONCURRENCY}, claimBatchSize ${CLAIM_BATCH_SIZE}, listen on (LISTEN/NOTIFY), other options at their defaults (lease 60 s, heartbeat 20 s, poll 1 s)`,
    client: "pool of 10 (default); payload validated by a zod schema, as an application would",
    enqueue: "enqueue() one at a time; enqueueMany() for batches",
    workflows: "flows.enqueue() with the whole graph in one call; dependents released by the completion's trigger",
    batch: `batchHandler with batch.maxSize ${BATCH_MAX_SIZE}, maxWaitMs ${BATCH_MAX_WAIT_MS}, returning one outcome per job; worker concurrency ${BATCH_CONCURRENCY}, claimBatchSize ${BATCH_CLAIM_SIZE}`,
    pressure: `concurrency ${PRESSURE_SLOTS.concurrency}, claimBatchSize ${PRESSURE_SLOTS.claimBatchSize} (a quarter of the slots, as above), the rest as above`,
    durable: `durable jobs of plain step() calls and sleep(); the same worker settings; for the SIGKILL run a lease of ${RESUME_LEASE.leaseMs / 1000} s swept every ${RESUME_LEASE.reclaimIntervalMs} ms (wake interval at its default, 1 s)`,
  },
  async unavailable() {
    return null;
  },
  async open(tag, options = {}) {
    const db = await createDatabase(`conveyor_${tag}`, options.server);
    const job = noopJob();
    const durable = options.durable ? durableJob() : null;
    let tracked = false;
    const conveyor = new Conveyor({ connectionString: db.url, jobs: durable ? [job, durable] : [job], logger: logger() });
    await conveyor.migrate();
    if (PAYLOAD_INDEX) await conveyor.pool.query("CREATE INDEX CONCURRENTLY jobs_payload_idx ON conveyor.jobs USING gin (payload jsonb_path_ops)");
    const instance: SystemInstance = {
      target: db.url,
      database: db.name,
      schema: "conveyor",
      jobTables: ["conveyor.jobs"],
      async enqueueOne(payload) {
        await conveyor.enqueue(job, payload);
      },
      async enqueueMany(payloads) {
        await conveyor.enqueueMany(payloads.map((payload) => ({ job, payload })));
      },
      async fillFinished(count) {
        // Rows as a worker leaves them: succeeded, one attempt, its execution
        // closed. Ids from the schema's uuid_v7(), so they sort before the
        // jobs enqueued after them, as in a store that has been running a while.
        for (const [start, end] of chunkRanges(count, FINISHED_CHUNK)) await conveyor.pool.query(FILL_FINISHED, [end - start]);
        await conveyor.pool.query("VACUUM (ANALYZE) conveyor.jobs, conveyor.job_executions");
      },
      async enqueueDurable(payloads) {
        if (!durable) throw new Error("open the store with { durable: true } to enqueue durable jobs");
        await conveyor.enqueueMany(payloads.map(({ n, steps = 0, sleepMs = 0 }) => ({ job: durable, payload: { n, steps, sleepMs } })));
      },
      async fillSleeping(count) {
        for (const [start, end] of chunkRanges(count, SLEEPING_CHUNK)) await conveyor.pool.query(FILL_SLEEPING, [end - start]);
      },
      settle: () => analyzeDatabase(db.url),
      async unfinished() {
        // Sleeping counts only where durable jobs run; `bench_poll` marks the bench's own polling in pg_stat_statements.
        const { rows } = await conveyor.pool.query(
          durable
            ? "SELECT count(*)::int AS bench_poll FROM conveyor.jobs WHERE status IN ('waiting', 'queued', 'retrying', 'running', 'sleeping')"
            : "SELECT count(*)::int AS bench_poll FROM conveyor.jobs WHERE status IN ('waiting', 'queued', 'retrying', 'running')",
        );
        return rows[0].bench_poll;
      },
      async succeeded() {
        const { rows } = await conveyor.pool.query("SELECT count(*)::int AS bench_poll FROM conveyor.jobs WHERE status = 'succeeded'");
        return rows[0].bench_poll;
      },
      async prepareGraph() {
        // The release's server time, from pg_stat_user_functions: sessions opened
        // from now on (the worker's) time PL/pgSQL functions. Setting it takes a
        // superuser; without one the figure is left out.
        try {
          await conveyor.pool.query(`ALTER DATABASE "${db.name}" SET track_functions = 'pl'`);
          tracked = true;
        } catch {
          tracked = false;
        }
        return null;
      },
      async enqueueGraph(graph) {
        await conveyor.flows.enqueue({ jobs: flowJobs(job, graph) });
      },
      async dependencyServerMs() {
        if (!tracked) return null;
        // The release triggers' total time on the server: recording each ended job at
        // its write, and releasing at commit (the release and settle they call, and
        // their waits for dependents' row locks that other completions hold).
        const { rows } = await conveyor.pool.query(
          "SELECT sum(total_time)::float8 AS ms FROM pg_stat_user_functions WHERE schemaname = 'conveyor' AND funcname IN ('jobs_release_dependents', 'jobs_release_recorded')",
        );
        return rows[0].ms ?? null;
      },
      async close() {
        await conveyor.close();
        await db.drop();
      },
    };
    return instance;
  },
};

/** The graph as enqueueFlow takes it: node i named `n{i}`, with payload `{ n: i }`. */
function flowJobs(job: AnyJobDefinition, graph: WorkflowGraph): Record<string, FlowJob> {
  const jobs: Record<string, FlowJob> = {};
  graph.dependsOn.forEach((dependsOn, n) => {
    jobs[`n${n}`] = { job, payload: { n }, dependsOn: dependsOn.map((d) => `n${d}`) };
  });
  return jobs;
}

const isDurable = (variant: WorkerVariant) => variant === "durable" || variant === "durableResume";

export const startWorker: StartWorker = async (target, variant, onJob) => {
  const job = isDurable(variant) ? durableJob(onJob) : variant === "batch" ? noopBatchJob(onJob) : noopJob(onJob, variant !== "notKept");
  const conveyor = new Conveyor({ connectionString: target, jobs: [job], logger: logger() });
  const lease = variant === "durableResume" ? RESUME_LEASE : {};
  const slots =
    variant === "batch"
      ? { concurrency: BATCH_CONCURRENCY, claimBatchSize: BATCH_CLAIM_SIZE }
      : variant === "pressure"
        ? PRESSURE_SLOTS
        : { concurrency: CONCURRENCY, claimBatchSize: CLAIM_BATCH_SIZE };
  const worker = conveyor.worker({ ...slots, ...lease });
  await worker.start();
  return {
    async stop() {
      await worker.stop();
      await conveyor.close();
    },
  };
};
