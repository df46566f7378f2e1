/**
 * Batch handlers (docs/jobs.md "Batch handlers"), on the server the
 * durable workloads use (lib/private-postgres.ts) when the bench could
 * start it: `batchJobs` no-op jobs enqueued into a fresh store and settled,
 * then one worker process taking them with the system's batch handler
 * (the `batch` worker variant: Conveyor's batchHandler, pg-boss's work()
 * with perJobResults, graphile-worker's batch jobs), and Conveyor's
 * per-job handlers on as many jobs beside them. Each run: jobs per second
 * from telling the worker to start until the store shows none unfinished;
 * per job, the server time (pg_stat_statements' executor time of the
 * store's statements over the run, the bench's polling left out: waits for
 * locks and for a CPU are in it, planning and commits are not), the
 * server's CPU time (every process of the bench's own server: commits, WAL
 * writing and autovacuum too) and the worker process's CPU time.
 */
import pg from "pg";
import { now, sleep } from "../lib/clock.js";
import type { BenchConfig } from "../lib/config.js";
import { serverCpuMs } from "../lib/private-postgres.js";
import { DeadlineError, WorkerProcess } from "../lib/worker-process.js";
import type { BenchSystem, SystemInstance } from "../systems/system.js";
import { type DurableServer, snapshot } from "./durable.js";
import { fill } from "./enqueue.js";
import { cappedBy } from "./process.js";

/** The wait before the server's CPU time is read, for the processes of the sessions that just ended to exit and be reaped. */
const CPU_SETTLE_MS = 200;

/** How the jobs are handled: the system's batch handler, or a handler per job. */
export type BatchMode = "batch" | "perJob";

export interface BatchRunResult {
  /** Jobs finished per second, from the worker's start until none is left unfinished (over the cap when capped). */
  jobsPerSecond: number;
  /** Executor time of the store's statements during the run per job finished (µs). */
  serverUsPerJob: number;
  /** CPU time of the server's processes during the run per job finished (µs); null unless the bench started the server. */
  serverCpuUsPerJob: number | null;
  /** The worker process's CPU time per handler call (µs), start to stop. */
  cpuUsPerJob: number;
  capped: boolean;
}

/** Poll until no job is left unfinished; throws a DeadlineError at the deadline. */
async function untilNoneLeft(instance: SystemInstance, deadline: number): Promise<void> {
  while ((await instance.unfinished()) > 0) {
    if (now() >= deadline) throw new DeadlineError("jobs left at the deadline");
    await sleep(5);
  }
}

/**
 * One run: a fresh store on `server` filled with `batchJobs` jobs (as the
 * system's batch worker takes them, for `batch`) and settled, one worker
 * process spawned with its libraries loaded, then started on the clock
 * until the worker has handled every job and the store shows none
 * unfinished. On the bench's own server pg_stat_statements is reset just
 * before the start, so that no entry of the run is evicted for room.
 */
export async function batchRun(system: BenchSystem, mode: BatchMode, config: BenchConfig, tag: string, server: DurableServer): Promise<BatchRunResult> {
  const instance = await system.open(tag, { server: server.url });
  let worker: WorkerProcess | null = null;
  try {
    const total = config.batchJobs;
    const enqueue = mode === "batch" && instance.enqueueBatchJobs ? instance.enqueueBatchJobs.bind(instance) : instance.enqueueMany.bind(instance);
    await fill(enqueue, total, config.fillChunk);
    await instance.settle();
    worker = await WorkerProcess.spawn(system.name, mode, instance.target);
    if (server.private && server.statements) await resetStatements(server.url);
    // The server's CPU time between sessions: the reset's has ended, the snapshot's is yet to start.
    await sleep(CPU_SETTLE_MS);
    const cpuBefore = server.pid === null ? null : serverCpuMs(server.pid);
    const before = await snapshot(server, instance.database!);
    const started = now();
    const deadline = started + config.batchCapMs;
    await worker.start({ milestones: [total] });
    const capped = await cappedBy(async () => {
      await worker!.milestone(total, deadline - now());
      await untilNoneLeft(instance, deadline);
    });
    const finishedAt = now();
    const finished = capped ? total - (await (instance.unfinishedItems ?? instance.unfinished).call(instance)) : total;
    const { count, cpuMs } = await worker.stop();
    worker = null;
    const after = await snapshot(server, instance.database!);
    // The worker's sessions and the snapshot's have ended; their processes are reaped within moments.
    await sleep(CPU_SETTLE_MS);
    const cpuAfter = server.pid === null ? null : serverCpuMs(server.pid);
    if (!capped && count !== total) throw new Error(`the handler was called for ${count} jobs, not ${total}`);
    // A job that failed is finished too: where the store can tell, a run counts only when every job succeeded.
    if (!capped && instance.succeeded) {
      const succeeded = await instance.succeeded();
      if (succeeded < total) throw new Error(`only ${succeeded} of the ${total} jobs succeeded`);
    }
    return {
      jobsPerSecond: (finished * 1000) / (finishedAt - started),
      serverUsPerJob: ((after.serverMs - before.serverMs) * 1000) / Math.max(1, finished),
      serverCpuUsPerJob: cpuBefore === null || cpuAfter === null ? null : ((cpuAfter - cpuBefore) * 1000) / Math.max(1, finished),
      cpuUsPerJob: (cpuMs * 1000) / Math.max(1, count),
      capped,
    };
  } finally {
    worker?.kill();
    await instance.close();
  }
}

async function resetStatements(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url, application_name: "conveyor-bench" });
  await client.connect();
  try {
    await client.query("SELECT pg_stat_statements_reset()");
  } finally {
    await client.end();
  }
}
