/**
 * Real worker processes for the fault tests: spawn the built CLI
 * (`node dist/src/cli/main.js worker …`), watch its JSON log lines, signal it
 * by PID, and make sure every process a test started is gone afterwards.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { createServer } from "node:net";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { Conveyor } from "../../packages/core/src/index.js";
import fixtureJobs, { ledgerTableSql } from "../fixtures/ledger-jobs.js";
import { createTestConveyor, testDatabaseUrl } from "../helpers/database.js";

export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
export const CORE_ROOT = resolve(REPO_ROOT, "packages", "core");
export const CLI = resolve(CORE_ROOT, "dist", "src", "cli", "main.js");
export const LEDGER_JOBS = "test/fixtures/ledger-jobs.js";

/** Short leases so faults resolve in seconds (heartbeat a quarter of the lease). */
export const FAST_LEASE_ARGS = ["--lease-ms", "2000", "--heartbeat-ms", "500", "--reclaim-interval-ms", "500", "--poll-interval-ms", "100"];

export function assertBuilt(): void {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run \`npm run build\` before these tests`);
}

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** One CLI process: its output, its exit, and signals sent by PID. */
export class CliProcess {
  readonly child: ChildProcess;
  readonly pid: number;
  readonly exited: Promise<Exit>;
  exit: Exit | null = null;
  stdout = "";
  stderr = "";
  private readonly lineWaiters = new Set<() => void>();

  /** `netns`: run in that network namespace (`ip netns exec`, which execs the CLI: the PID is the worker's). `cwd`: default the repository. */
  constructor(args: readonly string[], env: NodeJS.ProcessEnv, netns?: string, cwd = REPO_ROOT) {
    this.child = netns
      ? spawn("ip", ["netns", "exec", netns, process.execPath, CLI, ...args], { cwd, env, stdio: ["ignore", "pipe", "pipe"] })
      : spawn(process.execPath, [CLI, ...args], { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
    if (this.child.pid === undefined) throw new Error(`could not spawn ${CLI}`);
    this.pid = this.child.pid;
    // Always drain both pipes: a full pipe would block the worker's logging.
    this.child.stdout!.setEncoding("utf8").on("data", (chunk: string) => {
      this.stdout += chunk;
      for (const wake of this.lineWaiters) wake();
    });
    this.child.stderr!.setEncoding("utf8").on("data", (chunk: string) => {
      this.stderr += chunk;
    });
    this.exited = new Promise((resolveExit) => {
      this.child.once("exit", (code, signal) => {
        this.exit = { code, signal };
        for (const wake of this.lineWaiters) wake();
        resolveExit(this.exit);
      });
    });
    running.add(this);
    void this.exited.then(() => running.delete(this));
  }

  get alive(): boolean {
    return this.exit === null;
  }

  /** Parsed pino lines written to stdout so far (non-JSON lines are skipped). */
  logs(): Array<Record<string, unknown>> {
    const parsed: Array<Record<string, unknown>> = [];
    for (const line of this.stdout.split("\n")) {
      if (!line.startsWith("{")) continue;
      try {
        parsed.push(JSON.parse(line) as Record<string, unknown>);
      } catch {
        // a line still being written
      }
    }
    return parsed;
  }

  /** Wait for a log line whose `msg` is `msg`; fails early if the process exits first. */
  async waitForLog(msg: string, timeoutMs = 20_000): Promise<Record<string, unknown>> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const line = this.logs().find((entry) => entry.msg === msg);
      if (line) return line;
      if (!this.alive) throw new Error(`worker ${this.pid} exited (${JSON.stringify(this.exit)}) before logging "${msg}"\n${this.output()}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`worker ${this.pid} did not log "${msg}" within ${timeoutMs} ms\n${this.output()}`);
      await this.newOutput(Math.min(left, 200));
    }
  }

  /** Resolves when more stdout arrives, the process exits, or `ms` pass. */
  private newOutput(ms: number): Promise<void> {
    return new Promise((wake) => {
      const done = () => {
        clearTimeout(timer);
        this.lineWaiters.delete(done);
        wake();
      };
      const timer = setTimeout(done, ms);
      this.lineWaiters.add(done);
    });
  }

  /** Wait for "worker started": registered, listening and claiming. */
  ready(timeoutMs = 30_000): Promise<Record<string, unknown>> {
    return this.waitForLog("worker started", timeoutMs);
  }

  signal(signal: NodeJS.Signals): void {
    if (this.alive) process.kill(this.pid, signal);
  }

  /** Resolve with the exit, or throw if the process is still running after `timeoutMs`. */
  async waitForExit(timeoutMs: number): Promise<Exit> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`process ${this.pid} did not exit within ${timeoutMs} ms\n${this.output()}`)), timeoutMs);
    });
    try {
      return await Promise.race([this.exited, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** The tail of both streams, for failure messages. */
  output(chars = 4_000): string {
    return `--- stdout (tail) ---\n${this.stdout.slice(-chars)}\n--- stderr (tail) ---\n${this.stderr.slice(-chars)}`;
  }
}

const running = new Set<CliProcess>();

export interface WorkerSpawn {
  databaseUrl: string;
  schema: string;
  /** Jobs module path relative to the repo root. Default the ledger fixture. */
  jobs?: string;
  /** Further CLI arguments (concurrency, lease timings, metrics port…). */
  args?: readonly string[];
  env?: NodeJS.ProcessEnv;
  /** A network namespace to run it in (a host of its own). Default: this one. */
  netns?: string;
}

/** Start `conveyor worker` against the given database and schema. */
export function spawnWorker(options: WorkerSpawn): CliProcess {
  assertBuilt();
  return new CliProcess(
    ["worker", "--jobs", options.jobs ?? LEDGER_JOBS, "--schema", options.schema, ...(options.args ?? [])],
    cliEnv(options.databaseUrl, options.env),
    options.netns,
  );
}

/** Run the CLI with raw arguments (for argument-error tests). */
export function spawnCli(args: readonly string[], databaseUrl: string): CliProcess {
  assertBuilt();
  return new CliProcess(args, cliEnv(databaseUrl));
}

function cliEnv(databaseUrl: string, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return { ...process.env, DATABASE_URL: databaseUrl, CONVEYOR_LOG_LEVEL: "info", NODE_OPTIONS: "", ...extra };
}

/**
 * Kill every process these helpers started and is still running, by PID:
 * SIGCONT first (a test may have paused it with SIGSTOP; resuming is
 * harmless), then SIGKILL, then wait for the exit.
 */
export async function killAllWorkers(): Promise<void> {
  const alive = [...running];
  for (const proc of alive) {
    try {
      process.kill(proc.pid, "SIGCONT");
      process.kill(proc.pid, "SIGKILL");
    } catch {
      // already gone
    }
  }
  await Promise.all(alive.map((proc) => proc.waitForExit(10_000).catch(() => undefined)));
}

/** A TCP port that was free a moment ago (bind to 0, read it, release it). */
export function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.unref();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      if (typeof address !== "object" || address === null) return reject(new Error("no address"));
      server.close(() => resolvePort(address.port));
    });
  });
}

// ---------------------------------------------------------------------------
// A test schema with the fixture's ledger, and the queries the tests judge by.

export interface LedgerRow {
  job_id: string;
  execution_id: string;
  attempt: number;
  pid: number;
  worker_id: string;
  event: "start" | "done" | "abort";
  reason: string | null;
}

export interface ExecutionRow {
  id: string;
  job_id: string;
  attempt: number;
  worker_id: string;
  outcome: string;
  error: { name?: string; message?: string } | null;
  started_at: Date;
  finished_at: Date | null;
}

export interface JobRow {
  id: string;
  status: string;
  attempts: number;
  result: { pid?: number } | null;
  current_execution_id: string | null;
  finished_at: Date | null;
  updated_at: Date;
}

/** Queries over one schema's jobs, executions and ledger. */
export class LedgerDb {
  constructor(
    readonly query: <T>(text: string, values?: unknown[]) => Promise<T[]>,
    readonly schema: string,
  ) {}

  private get s(): string {
    return `"${this.schema}"`;
  }

  createLedger(): Promise<unknown> {
    return this.query(ledgerTableSql(this.schema));
  }

  async statusCounts(): Promise<Record<string, number>> {
    const rows = await this.query<{ status: string; n: number }>(`SELECT status, count(*)::int AS n FROM ${this.s}.jobs GROUP BY status`);
    return Object.fromEntries(rows.map((row) => [row.status, row.n]));
  }

  async countStatus(status: string): Promise<number> {
    const rows = await this.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${this.s}.jobs WHERE status = $1`, [status]);
    return rows[0]!.n;
  }

  async job(id: string): Promise<JobRow> {
    const rows = await this.query<JobRow>(
      `SELECT id, status, attempts, result, current_execution_id, finished_at, updated_at FROM ${this.s}.jobs WHERE id = $1`,
      [id],
    );
    if (!rows[0]) throw new Error(`no job ${id}`);
    return rows[0];
  }

  executions(jobId: string): Promise<ExecutionRow[]> {
    return this.query<ExecutionRow>(
      `SELECT id, job_id, attempt, worker_id, outcome, error, started_at, finished_at
         FROM ${this.s}.job_attempts WHERE job_id = $1 ORDER BY started_at, id`,
      [jobId],
    );
  }

  ledger(filter: { jobId?: string; pid?: number; event?: LedgerRow["event"] } = {}): Promise<LedgerRow[]> {
    return this.query<LedgerRow>(
      `SELECT job_id, execution_id, attempt, pid, worker_id, event, reason FROM ${this.s}.ledger
        WHERE ($1::uuid IS NULL OR job_id = $1) AND ($2::int IS NULL OR pid = $2) AND ($3::text IS NULL OR event = $3)
        ORDER BY id`,
      [filter.jobId ?? null, filter.pid ?? null, filter.event ?? null],
    );
  }
}

/** The worker id a CLI worker of this PID uses (`<host>-<pid>-<random>`), as a pattern. */
export function workerIdOf(pid: number): RegExp {
  return new RegExp(`-${pid}-[0-9a-f]+$`);
}

export interface LedgerSchema {
  conveyor: Conveyor;
  schema: string;
  databaseUrl: string;
  db: LedgerDb;
  cleanup(): Promise<void>;
}

/** A fresh migrated schema (the shared test harness) with the fixture's jobs and ledger table. */
export async function ledgerSchema(): Promise<LedgerSchema> {
  const { conveyor, schema, cleanup } = await createTestConveyor({ jobs: fixtureJobs });
  const db = new LedgerDb(async <T>(text: string, values?: unknown[]) => (await conveyor.pool.query(text, values)).rows as T[], schema);
  await db.createLedger();
  return { conveyor, schema, databaseUrl: testDatabaseUrl(), db, cleanup };
}
