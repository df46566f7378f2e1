/**
 * Durable execution (docs/durable-execution.md), on a server the bench
 * starts for these workloads (lib/private-postgres.ts) when it can:
 * - steps: jobs of `durableSteps` no-op steps against as many jobs with
 *   none, each run on a fresh store by one worker process: jobs per second,
 *   and the server time and WAL each step adds (the difference between the
 *   two runs, per step);
 * - resume: a worker process running durable jobs (steps with sleeps
 *   between) is SIGKILLed half-way through their steps; the time from the
 *   kill until a replacement process has finished all of them;
 * - sleeping (Conveyor): the claim rate over `sleepingWaiting` waiting jobs
 *   with `sleepingJobs` sleeping jobs in the store, against none.
 */
import pg from "pg";
import { now, sleep } from "../lib/clock.js";
import type { BenchConfig } from "../lib/config.js";
import { DeadlineError, WorkerProcess } from "../lib/worker-process.js";
import type { BenchSystem, Payload, SystemInstance } from "../systems/system.js";
import { fill } from "./enqueue.js";
import { cappedBy, windowRate } from "./process.js";

/**
 * The server the durable workloads run on, and how its figures are read.
 * Server time: pg_stat_statements' executor time of the store database's
 * statements (the bench's own polling left out) when it is loaded, else
 * pg_stat_database's active_time of that database (the polling included).
 * WAL: the server's WAL position when the server is the bench's own (every
 * record, commits and vacuum included), else pg_stat_statements' wal_bytes
 * (statements only), else not measured.
 */
export interface DurableServer {
  /** Superuser URL of an admin database. */
  url: string;
  /** True when the bench started it: nothing else writes WAL there. */
  private: boolean;
  statements: boolean;
  description: string;
  /** The postmaster's PID when the bench started the server, else null: its processes' CPU time is the server's (lib/private-postgres.ts serverCpuMs). */
  pid: number | null;
}

/** Whether pg_stat_statements answers on `url`. */
export async function durableServer(url: string, isPrivate: boolean, description: string, pid: number | null = null): Promise<DurableServer> {
  const statements = await withClient(url, async (client) => {
    try {
      await client.query("SELECT 1 FROM pg_stat_statements LIMIT 1");
      return true;
    } catch {
      return false;
    }
  });
  return { url, private: isPrivate, statements, description, pid };
}

async function withClient<T>(url: string, action: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url, application_name: "conveyor-bench" });
  await client.connect();
  try {
    return await action(client);
  } finally {
    await client.end();
  }
}

export interface Snapshot {
  lsn: string;
  serverMs: number;
  statementWal: number | null;
}

/** The server's WAL position and the store database's server time (and statement WAL) now; the durable and batch workloads take one either side of a run. */
export async function snapshot(server: DurableServer, database: string): Promise<Snapshot> {
  return withClient(server.url, async (client) => {
    const { rows } = server.statements
      ? await client.query(
          `SELECT pg_current_wal_lsn()::text AS lsn, coalesce(sum(s.total_exec_time), 0)::float8 AS ms, coalesce(sum(s.wal_bytes), 0)::float8 AS wal
           FROM pg_stat_statements AS s JOIN pg_database AS d ON d.oid = s.dbid
           WHERE d.datname = $1 AND s.query NOT LIKE '%bench_poll%'`,
          [database],
        )
      : await client.query("SELECT pg_current_wal_lsn()::text AS lsn, active_time::float8 AS ms, NULL::float8 AS wal FROM pg_stat_database WHERE datname = $1", [
          database,
        ]);
    return { lsn: rows[0].lsn, serverMs: rows[0].ms ?? NaN, statementWal: rows[0].wal };
  });
}

/** Server time (ms) and WAL (bytes; null when not measurable) between two snapshots. */
async function between(server: DurableServer, before: Snapshot, after: Snapshot): Promise<{ serverMs: number; walBytes: number | null }> {
  let walBytes: number | null = null;
  if (server.private) {
    walBytes = await withClient(server.url, async (client) => Number((await client.query("SELECT pg_wal_lsn_diff($1, $2)::float8 AS d", [after.lsn, before.lsn])).rows[0].d));
  } else if (after.statementWal !== null && before.statementWal !== null) {
    walBytes = after.statementWal - before.statementWal;
  }
  return { serverMs: after.serverMs - before.serverMs, walBytes };
}

/** A job that failed is finished too: a run counts only when every finished job succeeded. */
async function checkSucceeded(instance: SystemInstance, finished: number): Promise<void> {
  const succeeded = await instance.succeeded!();
  if (succeeded < finished) throw new Error(`only ${succeeded} of the ${finished} finished jobs succeeded`);
}

const durablePayloads = (count: number, steps: number, sleepMs: number): Payload[] => Array.from({ length: count }, (_, n) => ({ n, steps, sleepMs }));

/** Poll until no job (workflow) is left unfinished; throws a DeadlineError at the deadline. */
async function untilNoneLeft(instance: SystemInstance, deadline: number): Promise<void> {
  while ((await instance.unfinished()) > 0) {
    if (now() >= deadline) throw new DeadlineError("jobs left at the deadline");
    await sleep(10);
  }
}

export interface DurableRunResult {
  /** Jobs finished per second, from the worker's start until none is left unfinished (over the cap when capped). */
  jobsPerSecond: number;
  /** The same from the first step function's call (NaN without steps): the rate without the system's start-up. */
  jobsPerSecondFromFirstStep: number;
  /** Server time of the store's statements during the run (ms), and the WAL it wrote (bytes; null when not measured). */
  serverMs: number;
  walBytes: number | null;
  /** Step functions the worker ran. */
  stepsRun: number;
  capped: boolean;
}

/**
 * One run: `durableJobs` jobs of `steps` steps enqueued into a fresh store
 * and settled, then one worker process started on the clock, until the
 * store shows none unfinished; server statistics read just before the
 * start and after the worker stopped.
 */
async function durableRun(system: BenchSystem, config: BenchConfig, tag: string, server: DurableServer, steps: number): Promise<DurableRunResult> {
  const instance = await system.open(tag, { server: server.url, durable: true });
  let worker: WorkerProcess | null = null;
  try {
    const total = config.durableJobs;
    await instance.enqueueDurable!(durablePayloads(total, steps, 0));
    await instance.settle();
    worker = await WorkerProcess.spawn(system.name, "durable", instance.target);
    const before = await snapshot(server, instance.database!);
    const started = now();
    const deadline = started + config.durableCapMs;
    await worker.start({ milestones: [1] });
    const capped = await cappedBy(() => untilNoneLeft(instance, deadline));
    const finishedAt = now();
    const finished = capped ? total - (await instance.unfinished()) : total;
    const firstStep = steps > 0 ? await worker.milestone(1, 1_000) : NaN;
    const { count } = await worker.stop();
    worker = null;
    const { serverMs, walBytes } = await between(server, before, await snapshot(server, instance.database!));
    await checkSucceeded(instance, finished);
    if (!capped && count !== total * steps) throw new Error(`${count} step functions ran, not ${total} × ${steps}`);
    return {
      jobsPerSecond: (finished * 1000) / (finishedAt - started),
      jobsPerSecondFromFirstStep: (finished * 1000) / (finishedAt - firstStep),
      serverMs,
      walBytes,
      stepsRun: count,
      capped,
    };
  } finally {
    worker?.kill();
    await instance.close();
  }
}

export interface DurableStepsResult {
  /** Jobs of `durableSteps` steps per second (from the worker's start, and from the first step), and jobs of none. */
  jobsPerSecond: number;
  jobsPerSecondFromFirstStep: number;
  noStepJobsPerSecond: number;
  /** A job without steps: server time (µs) and WAL (bytes) per job. */
  serverUsPerJob: number;
  walBytesPerJob: number | null;
  /** What one step adds: (run with steps − run without) / (jobs × steps). */
  serverUsPerStep: number;
  walBytesPerStep: number | null;
  /** Why a figure is off (a capped run), or null. */
  note: string | null;
}

/** The steps workload for one system: the run without steps, then the run with `durableSteps`. */
export async function durableSteps(system: BenchSystem, config: BenchConfig, tag: string, server: DurableServer): Promise<DurableStepsResult> {
  const jobs = config.durableJobs;
  const none = await durableRun(system, config, `${tag}0`, server, 0);
  const some = await durableRun(system, config, `${tag}s`, server, config.durableSteps);
  const steps = jobs * config.durableSteps;
  const capped = [none.capped && "the run without steps", some.capped && "the run with steps"].filter(Boolean);
  const perStep = (a: number | null, b: number | null) => (a === null || b === null || capped.length > 0 ? NaN : (b - a) / steps);
  return {
    jobsPerSecond: some.jobsPerSecond,
    jobsPerSecondFromFirstStep: some.jobsPerSecondFromFirstStep,
    noStepJobsPerSecond: none.jobsPerSecond,
    serverUsPerJob: (none.serverMs * 1000) / jobs,
    walBytesPerJob: none.walBytes === null ? null : none.walBytes / jobs,
    serverUsPerStep: perStep(none.serverMs * 1000, some.serverMs * 1000),
    walBytesPerStep: none.walBytes === null ? null : perStep(none.walBytes, some.walBytes),
    note: capped.length > 0 ? `${capped.join(" and ")} capped at ${config.durableCapMs / 1000} s` : null,
  };
}

/** Steps of each job in the SIGKILL run; a sleep between two. */
export const RESUME_STEPS = 3;

export interface ResumeResult {
  /** From the SIGKILL until no job is left unfinished (s; over the cap when capped). */
  seconds: number;
  /** Step functions run by the first process when it was killed (at least), and by the replacement. */
  stepsBeforeKill: number;
  stepsAfterKill: number;
  capped: boolean;
}

/**
 * The resume workload for one system: `durableResumeJobs` jobs of
 * RESUME_STEPS steps with a sleep of `durableResumeSleepMs` between two,
 * run by one worker process that is SIGKILLed once half of all the steps
 * have run; a replacement process, spawned beforehand with its libraries
 * loaded (a restart's start-up time is Node's, not the system's), is
 * started at the kill. The clock runs from the kill until the store shows
 * none unfinished.
 */
export async function resumeAfterKill(system: BenchSystem, config: BenchConfig, tag: string, server: DurableServer): Promise<ResumeResult> {
  const instance = await system.open(tag, { server: server.url, durable: true });
  let first: WorkerProcess | null = null;
  let second: WorkerProcess | null = null;
  try {
    const total = config.durableResumeJobs;
    await instance.enqueueDurable!(durablePayloads(total, RESUME_STEPS, config.durableResumeSleepMs));
    await instance.settle();
    first = await WorkerProcess.spawn(system.name, "durableResume", instance.target);
    second = await WorkerProcess.spawn(system.name, "durableResume", instance.target);
    const killAt = Math.floor((total * RESUME_STEPS) / 2);
    const deadline = now() + config.durableCapMs;
    await first.start({ milestones: [killAt] });
    await first.milestone(killAt, deadline - now());
    const killed = now();
    first.kill();
    first = null;
    const restartDeadline = killed + config.durableCapMs;
    await second.start();
    const capped = await cappedBy(() => untilNoneLeft(instance, restartDeadline));
    const done = now();
    const { count } = await second.stop();
    second = null;
    if (!capped) await checkSucceeded(instance, total);
    return { seconds: (done - killed) / 1000, stepsBeforeKill: killAt, stepsAfterKill: count, capped };
  } finally {
    first?.kill();
    second?.kill();
    await instance.close();
  }
}

/**
 * The sleeping workload (systems with `fillSleeping`): two stores on the
 * durable server, one with `sleepingJobs` sleeping jobs written into it,
 * one without; then `runs` rounds, each measuring a fresh worker on either
 * store in turn, the queue topped up to `sleepingWaiting` waiting and the
 * store settled first. The rate is taken over handler counts `windowLarge`
 * from the worker's own milestones, as at 1M waiting: no poll of the store
 * runs beside the worker, whose count would read the sleeping rows too.
 * Sleeping jobs are due days later: none wakes during the run.
 */
export async function sleepingClaim(
  system: BenchSystem,
  config: BenchConfig,
  tag: string,
  server: DurableServer,
  log: (message: string) => void,
): Promise<{ none: Array<{ rate: number; capped: boolean } | Error>; sleeping: Array<{ rate: number; capped: boolean } | Error> }> {
  const stores: SystemInstance[] = [];
  try {
    const none = await system.open(`${tag}n`, { server: server.url });
    stores.push(none);
    const withSleeping = await system.open(`${tag}z`, { server: server.url });
    stores.push(withSleeping);
    if (!withSleeping.fillSleeping) throw new Error(`${system.name} has no sleeping jobs to fill`);
    const fillStarted = now();
    await withSleeping.fillSleeping(config.sleepingJobs);
    log(`  ${system.name} wrote ${config.sleepingJobs.toLocaleString("en-US")} sleeping jobs in ${((now() - fillStarted) / 1000).toFixed(1)} s`);
    const results = { none: [] as Array<{ rate: number; capped: boolean } | Error>, sleeping: [] as Array<{ rate: number; capped: boolean } | Error> };
    for (let run = 0; run < config.runs; run++) {
      for (const [store, into] of [
        [none, results.none],
        [withSleeping, results.sleeping],
      ] as const) {
        // Stores opened for ordinary jobs: unfinished() leaves sleeping jobs out.
        await fill((p) => store.enqueueMany(p), config.sleepingWaiting - (await store.unfinished()), config.fillChunk);
        await store.settle();
        into.push(await windowRate(system, store.target, config.windowLarge, config.scaleCapMs).catch((error: Error) => error));
      }
    }
    return results;
  } finally {
    for (const store of stores) await store.close();
  }
}
