/**
 * What every chaos scenario shares: a database of its own on the test
 * server (so its deadlock counter and its backends are the scenario's
 * alone), a migrated schema with the side-effect ledger, worker processes
 * started through the CLI, a monitor of leases left to rot, the drain wait,
 * the scan of worker logs, and the one-line summary.
 */
import { randomBytes } from "node:crypto";
import pg from "pg";
import pino from "pino";
import { afterAll, beforeAll } from "vitest";
import { Conveyor } from "../../packages/core/src/index.js";
import chaosJobs, { type ChaosBatchPayload, type ChaosDurablePayload, type ChaosPayload, chaosLedgerSql } from "../fixtures/chaos-jobs.js";
import { testDatabaseUrl } from "../helpers/database.js";
import { type CliProcess, killAllWorkers, spawnWorker } from "../worker-processes/process-helpers.js";
import { DedicatedPostgres, type DedicatedPostgresOptions } from "./dedicated-postgres.js";
import { FaultProxy } from "./fault-proxy.js";
import { describeDuplicates, type JudgeOptions, judge, type Query, type Verdict } from "./judge.js";
import { StopWaiting, waitFor } from "../helpers/wait-for.js";

export const CHAOS_JOBS = "test/fixtures/chaos-jobs.js";

/** A database created for one test file and dropped after it. */
export interface ChaosDatabase {
  name: string;
  url: string;
  drop(): Promise<void>;
}

/** Create a fresh database on the server `baseUrl` names (default the test server). */
export async function createChaosDatabase(baseUrl = testDatabaseUrl()): Promise<ChaosDatabase> {
  const name = `chaos_${randomBytes(5).toString("hex")}`;
  await withClient(baseUrl, (client) => client.query(`CREATE DATABASE ${name}`));
  const url = new URL(baseUrl);
  url.pathname = `/${name}`;
  return {
    name,
    url: url.toString(),
    drop: () => withClient(baseUrl, (client) => client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(() => undefined),
  };
}

async function withClient<T>(url: string, use: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000 });
  client.on("error", () => {});
  await client.connect();
  try {
    return await use(client);
  } finally {
    await client.end().catch(() => {});
  }
}

/** The URL with its host and port replaced (to route a worker through a proxy). */
export function viaPort(url: string, port: number): string {
  const rerouted = new URL(url);
  rerouted.hostname = "127.0.0.1";
  rerouted.port = String(port);
  return rerouted.toString();
}

export type Enqueue = (
  | { job: "chaos.work" | "chaos.fragile" | "chaos.timed"; payload: ChaosPayload }
  | { job: "chaos.durable"; payload: ChaosDurablePayload }
  | { job: "chaos.batch"; payload: ChaosBatchPayload }
) & {
  /** Default the kind's queue ("default"). */
  queue?: string;
};

/**
 * One scenario's schema in a chaos database: a client for the test, the
 * ledger, the workers it started (kept, dead or alive, for the log scan).
 */
export class ChaosRun {
  readonly schema = `chaos_${randomBytes(4).toString("hex")}`;
  readonly conveyor: Conveyor;
  readonly workers: CliProcess[] = [];
  readonly startedAt = Date.now();
  readonly q: Query;
  private readonly monitor: LeaseMonitor;

  constructor(
    readonly name: string,
    readonly databaseUrl: string,
  ) {
    this.conveyor = new Conveyor({
      connectionString: databaseUrl,
      schema: this.schema,
      jobs: chaosJobs,
      poolSize: 6,
      logger: pino({ level: "silent" }),
    });
    this.q = async <T>(text: string, values?: unknown[]) => (await this.conveyor.pool.query(text, values)).rows as T[];
    this.monitor = new LeaseMonitor(this.q, this.schema);
  }

  get s(): string {
    return `"${this.schema}"`;
  }

  async setup(): Promise<this> {
    await this.conveyor.migrate();
    await this.q(chaosLedgerSql(this.schema));
    return this;
  }

  /** Start a worker process on this schema (direct, or at `databaseUrl` when given: a proxy). */
  spawn(args: readonly string[], options: { databaseUrl?: string; env?: NodeJS.ProcessEnv; netns?: string } = {}): CliProcess {
    const worker = spawnWorker({
      databaseUrl: options.databaseUrl ?? this.databaseUrl,
      schema: this.schema,
      jobs: CHAOS_JOBS,
      args: ["--no-migrate", ...args],
      env: options.env,
      netns: options.netns,
    });
    this.workers.push(worker);
    return worker;
  }

  async enqueue(items: readonly Enqueue[]): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 0; i < items.length; i += 10_000) {
      const batch = items.slice(i, i + 10_000).map((item) => ({ job: item.job, payload: item.payload, queue: item.queue }));
      const jobs = await this.conveyor.enqueueMany(batch);
      ids.push(...jobs.map((job) => job.id));
    }
    return ids;
  }

  /** True when the query returns a row. */
  async exists(text: string, values?: unknown[]): Promise<boolean> {
    return (await this.q(text, values)).length > 0;
  }

  async statusCounts(): Promise<Record<string, number>> {
    const rows = await this.q<{ status: string; n: number }>(`SELECT status, count(*)::int AS n FROM ${this.s}.jobs GROUP BY status`);
    return Object.fromEntries(rows.map((row) => [row.status, row.n]));
  }

  /** Watch for jobs left `running` past their lease; see `LeaseMonitor`. */
  startLeaseMonitor(): void {
    this.monitor.start();
  }

  /** The longest a job sat `running` with an expired lease, in ms (monitor samples). */
  async stopLeaseMonitor(): Promise<number> {
    return this.monitor.stop();
  }

  /**
   * Wait until no job is queued, retrying, running or sleeping, within `boundMs` of
   * `since` (default: when the run started). Returns the seconds it took.
   * Fails early when `alive` names a worker that should not have exited.
   */
  async drained(boundMs: number, since = this.startedAt, mustStayAlive: () => CliProcess[] = () => []): Promise<number> {
    const left = Math.max(1_000, since + boundMs - Date.now());
    await waitFor(
      `every job to reach a terminal state within ${boundMs / 1000} s`,
      async () => {
        for (const w of mustStayAlive()) if (!w.alive) throw new StopWaiting(`worker ${w.pid} exited: ${JSON.stringify(w.exit)}\n${w.output()}`);
        const counts = await this.statusCounts();
        return !counts.queued && !counts.retrying && !counts.running && !counts.sleeping ? true : null;
      },
      left,
      250,
    ).catch(async (error: unknown) => {
      throw new Error(`${(error as Error).message}; statuses: ${JSON.stringify(await this.statusCounts())}`);
    });
    return (Date.now() - since) / 1000;
  }

  judge(options: JudgeOptions = {}): Promise<Verdict> {
    return judge(this.q, this.schema, options);
  }

  /** Worker log lines or stderr that report a deadlock, a CHECK violation or a crash of the process itself. */
  logProblems(): string[] {
    const problems: string[] = [];
    // SQLSTATEs as whole words: a uuid in a log line may hold the same digits.
    const bad = /deadlock detected|\b40P01\b|violates check constraint|\b23514\b|could not record attempt outcome|Uncaught|FATAL ERROR/i;
    for (const w of this.workers) {
      for (const line of `${w.stdout}\n${w.stderr}`.split("\n")) {
        if (bad.test(line)) problems.push(`pid ${w.pid}: ${line.slice(0, 400)}`);
      }
    }
    return problems;
  }

  /** Stop every worker still running: SIGTERM and wait (exit 0 expected), SIGKILL if it hangs. */
  async stopWorkers(timeoutMs = 20_000): Promise<void> {
    const alive = this.workers.filter((w) => w.alive);
    for (const w of alive) w.signal("SIGTERM");
    await Promise.all(alive.map((w) => w.waitForExit(timeoutMs).catch(() => w.signal("SIGKILL"))));
  }

  async cleanup(): Promise<void> {
    await this.monitor.stop();
    await killAllWorkers();
    await this.q(`DROP SCHEMA IF EXISTS ${this.s} CASCADE`).catch(() => {});
    await this.conveyor.close().catch(() => {});
  }
}

/**
 * Samples, every 500 ms, how long the most overdue `running` job has sat
 * with an expired lease. The reclaim sweep (every worker, jittered interval)
 * must keep that bounded: "none is left running without a live lease".
 * Samples that fail (the server is restarting) are skipped.
 */
export class LeaseMonitor {
  private timer: NodeJS.Timeout | null = null;
  private sampling: Promise<void> | null = null;
  maxOverdueMs = 0;

  constructor(
    private readonly q: Query,
    private readonly schema: string,
  ) {}

  start(): void {
    this.timer = setInterval(() => {
      if (this.sampling) return;
      this.sampling = this.sample().finally(() => {
        this.sampling = null;
      });
    }, 500);
  }

  private async sample(): Promise<void> {
    try {
      const [row] = await this.q<{ overdue_ms: number | null }>(
        `SELECT extract(epoch FROM max(now() - lease_expires_at)) * 1000 AS overdue_ms
           FROM "${this.schema}".jobs WHERE status = 'running' AND lease_expires_at < now()`,
      );
      this.maxOverdueMs = Math.max(this.maxOverdueMs, Number(row?.overdue_ms ?? 0));
    } catch {
      // server away: nobody can reclaim now; the sample after it comes back counts
    }
  }

  async stop(): Promise<number> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.sampling;
    return this.maxOverdueMs;
  }
}

/** Deadlocks Postgres counted in the database `url` names (pg_stat_database). */
export async function deadlocks(url: string): Promise<number> {
  return withClient(url, async (client) => {
    const { rows } = await client.query<{ n: string }>("SELECT deadlocks AS n FROM pg_stat_database WHERE datname = current_database()");
    return Number(rows[0]?.n ?? 0);
  });
}

/** Print the scenario's summary line (vitest shows test stdout). */
export function summary(name: string, verdict: Verdict, faults: string, drainSeconds: number, extra = ""): string {
  const line =
    `[chaos] ${name}: ${verdict.jobs} jobs (${Object.entries(verdict.statuses)
      .map(([status, n]) => `${n} ${status}`)
      .join(", ")}), ${faults}, ${describeDuplicates(verdict)}, ${verdict.executions} executions, ` +
    `drained in ${drainSeconds.toFixed(1)} s${extra ? `; ${extra}` : ""}`;
  console.log(line);
  return line;
}

/** Random integer in [min, max]. */
export function between(min: number, max: number): number {
  return min + Math.floor(Math.random() * (max - min + 1));
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Executions of a worker process (by PID) that were open at `at` (database clock). */
export async function openExecutionsAt(run: ChaosRun, pid: number, at: Date): Promise<Array<{ id: string; job_id: string; outcome: string }>> {
  return run.q(
    `SELECT id, job_id, outcome FROM ${run.s}.job_attempts
      WHERE worker_id LIKE '%-' || $1::text || '-%' AND started_at <= $2 AND (finished_at IS NULL OR finished_at > $2)`,
    [pid, at],
  );
}

/** The database's clock now. */
export async function dbNow(run: ChaosRun): Promise<Date> {
  const [row] = await run.q<{ now: Date }>("SELECT clock_timestamp() AS now");
  return row!.now;
}

/** A test file's chaos database and the run that uses it. */
export interface ChaosFile {
  readonly database: ChaosDatabase;
  /** Set up the file's run on its database (cleaned up with the file). */
  start(name: string): Promise<ChaosRun>;
}

/** A chaos file whose workers may reach PostgreSQL through a fault proxy (viaPort(url, proxy.port)). */
export interface ProxiedChaosFile extends ChaosFile {
  readonly proxy: FaultProxy;
}

/**
 * Call at a test file's top level: a fresh database for the file, created
 * before its tests and dropped after them, together with the run started in it.
 */
export function chaosFile(): ChaosFile {
  return fileScenario(false);
}

/** As chaosFile, with a fault proxy in front of the test server, started before the file's tests and stopped after its run. */
export function proxiedChaosFile(): ProxiedChaosFile {
  return fileScenario(true);
}

function fileScenario(proxied: boolean): ProxiedChaosFile {
  let database: ChaosDatabase | null = null;
  let proxy: FaultProxy | null = null;
  let run: ChaosRun | null = null;
  const during = <T>(value: T | null, what: string): T => {
    if (value === null) throw new Error(`the ${what} exists only while the file's tests run`);
    return value;
  };
  beforeAll(async () => {
    database = await createChaosDatabase();
    if (proxied) {
      const target = new URL(testDatabaseUrl());
      proxy = new FaultProxy(target.hostname, Number(target.port || 5432));
      await proxy.start();
    }
  });
  afterAll(async () => {
    await run?.cleanup();
    await proxy?.stop();
    await database?.drop();
  });
  return {
    get database() {
      return during(database, "chaos database");
    },
    get proxy() {
      return during(proxy, "fault proxy");
    },
    async start(name) {
      run = await new ChaosRun(name, this.database.url).setup();
      return run;
    },
  };
}

/**
 * Run `work` on a scenario run of its own, in a database of its own, on a
 * PostgreSQL server of its own (a scenario that restarts the server must not
 * restart everyone's), started with `options`. The run, the database and the
 * server are stopped and removed afterwards, whatever happened.
 */
export async function onDedicatedServer<T>(
  name: string,
  work: (r: ChaosRun, server: DedicatedPostgres) => Promise<T>,
  options: DedicatedPostgresOptions = {},
): Promise<T> {
  let server: DedicatedPostgres | null = null;
  let database: ChaosDatabase | null = null;
  let run: ChaosRun | null = null;
  try {
    server = await new DedicatedPostgres(options).start();
    database = await createChaosDatabase(server.url);
    run = await new ChaosRun(name, database.url).setup();
    return await work(run, server);
  } finally {
    await run?.cleanup();
    await database?.drop().catch(() => {});
    await server?.cleanup();
  }
}

/** What a worker logs when its lease keeper gives up an attempt whose lease could have expired. */
export const LOCAL_FENCE = "lease lost while running; this attempt writes nothing";
/** What a worker logs when the database refused an outcome: the job was no longer that attempt's. */
export const DATABASE_FENCE = "outcome not recorded: the job is no longer ours (fenced)";

/** A check as a query whose rows are its violations: none, or one line naming `what` with a few of them. */
export async function violations(r: ChaosRun, what: string, text: string, values?: unknown[]): Promise<string[]> {
  const rows = await r.q(text, values);
  return rows.length === 0 ? [] : [`${what}: ${rows.length} (e.g. ${JSON.stringify(rows.slice(0, 10))})`];
}

/** The jobs of run `r` that did not succeed exactly once (one succeeded attempt each), as violations. */
export function notSucceededOnce(r: ChaosRun): Promise<string[]> {
  const s = r.s;
  return violations(
    r,
    "jobs without exactly one succeeded execution",
    `SELECT j.id, j.status, (SELECT count(*)::int FROM ${s}.job_attempts AS e WHERE e.job_id = j.id AND e.outcome = 'succeeded') AS wins
       FROM ${s}.jobs AS j
      WHERE j.status <> 'succeeded' OR (SELECT count(*) FROM ${s}.job_attempts AS e WHERE e.job_id = j.id AND e.outcome = 'succeeded') <> 1`,
  );
}

/** Wait until `worker` has logged a fence (LOCAL_FENCE or DATABASE_FENCE) for each of `executions`; returns its fence lines. */
export function fencesLogged(worker: CliProcess, executions: ReadonlyArray<{ id: string }>): Promise<Array<Record<string, unknown>>> {
  return waitFor(
    `worker ${worker.pid} to log a fence for each attempt taken from it`,
    () => {
      const lines = worker.logs().filter((line) => line.msg === LOCAL_FENCE || line.msg === DATABASE_FENCE);
      const missing = executions.filter((e) => !lines.some((line) => line.executionId === e.id));
      return missing.length === 0 ? lines : null;
    },
    10_000,
    100,
  );
}

/**
 * SIGSTOP `worker` until the attempts it held at the freeze are reclaimed
 * (no longer `running`), or `maxMs` at most, and for at least one lease
 * (its last renewal may have come up to a heartbeat before the freeze);
 * then SIGCONT. Returns the attempts it held and how long it was frozen.
 */
export async function freezeUntilReclaimed(r: ChaosRun, worker: CliProcess, leaseMs: number, maxMs: number): Promise<{ executions: string[]; frozenMs: number }> {
  worker.signal("SIGSTOP");
  const frozenAt = Date.now();
  const executions = (await openExecutionsAt(r, worker.pid, await dbNow(r))).map((e) => e.id);
  try {
    await waitFor(
      `the attempts of frozen worker ${worker.pid} to be reclaimed`,
      async () => {
        const [row] = await r.q<{ running: number }>(
          `SELECT count(*)::int AS running FROM ${r.s}.job_attempts WHERE id = ANY($1::uuid[]) AND outcome = 'running'`,
          [executions],
        );
        return row!.running === 0 || Date.now() - frozenAt > maxMs;
      },
      maxMs + 10_000,
      100,
    );
    await sleep(Math.max(0, frozenAt + leaseMs + 250 - Date.now()));
  } finally {
    worker.signal("SIGCONT");
  }
  return { executions, frozenMs: Date.now() - frozenAt };
}
