import type { DBOSClient, DLogger } from "@dbos-inc/dbos-sdk";
import pg from "pg";
import { analyzeDatabase, createDatabase } from "../lib/postgres.js";
import type { BenchSystem, Payload, StartWorker } from "./system.js";

/**
 * DBOS Transact, in the durable-execution workloads only (a workflow engine
 * with a queue, measured against Conveyor's durable jobs): a workflow of
 * `steps` DBOS.runStep calls, with DBOS.sleep between two when `sleepMs` is
 * above 0, enqueued on a queue of its own by a DBOSClient and run by a
 * process that launched DBOS. Its system database is a database of its own
 * on the same server as Conveyor's.
 *
 * Settings: the queue's workerConcurrency is Conveyor's worker concurrency
 * (the same number of jobs in flight per process); its polling interval is
 * 100 ms, not the default 1 s (minPollingIntervalMs, the documented knob for
 * how soon enqueued work is dequeued); everything else at its defaults
 * (system database pool of 10, as Conveyor's). A restarted process recovers
 * the pending workflows of its executor id (`local` for both processes, the
 * default) at launch.
 */
const APP = "conveyor-bench";
const QUEUE = "bench";
const WORKFLOW = "benchDurable";
const WORKER_CONCURRENCY = Number(process.env.BENCH_CONVEYOR_CONCURRENCY ?? 2_000);
const POLLING_MS = 100;
/** The system database pool: DBOS's default (BENCH_DBOS_POOL overrides it, for profiling). */
const POOL_SIZE = Number(process.env.BENCH_DBOS_POOL ?? 10);
/** Enqueue calls in flight at once while filling (the client has no batch enqueue). */
const ENQUEUE_PARALLEL = 8;

const sdk = () => import("@dbos-inc/dbos-sdk");

/**
 * Warnings and errors to stderr, the rest dropped: the bench's stdout is its
 * report. Once `closed()` says so, nothing: dropping the database ends the
 * client's last connections, which it reports as errors.
 */
function quietLogger(closed: () => boolean): DLogger {
  const write = (entry: unknown) => {
    if (!closed()) process.stderr.write(`dbos: ${entry instanceof Error ? entry.message : String(entry)}\n`);
  };
  return { info: () => {}, debug: () => {}, warn: write, error: write };
}

/** Run `action` with console.log silenced: DBOS.migrate logs its progress there, and takes no logger. */
async function withoutConsoleLog<T>(action: () => Promise<T>): Promise<T> {
  const log = console.log;
  console.log = () => {};
  try {
    return await action();
  } finally {
    console.log = log;
  }
}

export const system: BenchSystem = {
  name: "dbos",
  durableOnly: true,
  settings: {
    worker: `DBOS.launch() with one registered queue: workerConcurrency ${WORKER_CONCURRENCY} (Conveyor's worker concurrency), minPollingIntervalMs ${POLLING_MS}; system database pool of ${POOL_SIZE}${POOL_SIZE === 10 ? " (default)" : ""}, log level warn`,
    client: "DBOSClient.enqueue() per workflow (no batch API), 8 in flight",
    durable: "a registered workflow of DBOS.runStep() calls and DBOS.sleep(); recovery of pending workflows at launch (executor id `local`, the default)",
  },
  async unavailable() {
    try {
      await sdk();
      return null;
    } catch (error) {
      return `@dbos-inc/dbos-sdk does not load: ${(error as Error).message.split("\n")[0]}`;
    }
  },
  async open(tag, options = {}) {
    const { DBOS, DBOSClient } = await sdk();
    const db = await createDatabase(`dbos_${tag}`, options.server);
    const pool = new pg.Pool({ connectionString: db.url, max: 2 });
    pool.on("error", () => {});
    let client: DBOSClient | null = null;
    let closed = false;
    try {
      await withoutConsoleLog(() => DBOS.migrate(db.url));
      client = await DBOSClient.create({ systemDatabaseUrl: db.url, applicationName: APP, logger: quietLogger(() => closed) });
      await client.registerQueue(QUEUE, { workerConcurrency: WORKER_CONCURRENCY, minPollingIntervalMs: POLLING_MS });
    } catch (error) {
      await client?.destroy();
      await pool.end();
      await db.drop();
      throw error;
    }
    const dbos = client;
    const unsupported = async () => {
      throw new Error("dbos takes part in the durable-execution workloads only");
    };
    return {
      target: db.url,
      database: db.name,
      enqueueOne: unsupported,
      enqueueMany: unsupported,
      async enqueueDurable(payloads) {
        let next = 0;
        const lane = async () => {
          while (next < payloads.length) {
            const { n, steps = 0, sleepMs = 0 } = payloads[next++]!;
            await dbos.enqueue({ queueName: QUEUE, workflowName: WORKFLOW }, n, steps, sleepMs);
          }
        };
        await Promise.all(Array.from({ length: ENQUEUE_PARALLEL }, lane));
      },
      settle: () => analyzeDatabase(db.url),
      async unfinished() {
        const { rows } = await pool.query(
          "SELECT count(*)::int AS bench_poll FROM dbos.workflow_status WHERE status IN ('ENQUEUED', 'PENDING', 'DELAYED')",
        );
        return rows[0].bench_poll;
      },
      async succeeded() {
        const { rows } = await pool.query("SELECT count(*)::int AS bench_poll FROM dbos.workflow_status WHERE status = 'SUCCESS'");
        return rows[0].bench_poll;
      },
      async close() {
        closed = true;
        await dbos.destroy();
        await pool.end();
        await db.drop();
      },
    };
  },
};

export const startWorker: StartWorker = async (target, _variant, onJob) => {
  const { DBOS } = await sdk();
  // pg's notice that DBOS issues queries on a client already busy: the same
  // two lines from every worker process, on the bench's stderr.
  process.noDeprecation = true;
  DBOS.setConfig({ name: APP, systemDatabaseUrl: target, systemDatabasePoolSize: POOL_SIZE, logLevel: "warn" });
  DBOS.registerWorkflow(
    async (n: number, steps: number, sleepMs: number) => {
      const payload: Payload = { n, steps, sleepMs };
      for (let i = 0; i < steps; i++) {
        await DBOS.runStep(
          async () => {
            onJob(payload);
            return { i };
          },
          { name: `s${i}` },
        );
        if (sleepMs > 0 && i < steps - 1) await DBOS.sleep(sleepMs);
      }
    },
    { name: WORKFLOW },
  );
  await DBOS.launch();
  return {
    async stop() {
      await DBOS.shutdown();
    },
  };
};
