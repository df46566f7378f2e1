/**
 * A PostgreSQL server the bench runs itself, for the durable-execution
 * workloads (workloads/durable.ts): a fresh cluster in a temporary
 * directory, on a free port of 127.0.0.1, with pg_stat_statements loaded.
 * Its WAL position moves only with what the bench does, so a WAL-bytes
 * delta is the measured run's alone; and pg_stat_statements, which the
 * machine's server does not load, gives server time per database.
 *
 * Same binaries as the machine's server (`pg_config --bindir`, or
 * BENCH_PG_BINDIR) and initdb's defaults otherwise (fsync and
 * synchronous_commit on, shared_buffers 128 MB). As root it runs as the
 * `postgres` OS user, since PostgreSQL refuses root.
 *
 * Stopped by its PID and its directory removed on every way the bench ends:
 * `stopPrivatePostgres()` before the bench's own exit; on SIGINT and SIGTERM;
 * and on any other exit (a failure) with SIGQUIT, synchronously. Only a
 * SIGKILL of the bench leaves it behind.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { accessSync, chmodSync, chownSync, constants, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { sleep, withTimeout } from "./clock.js";

export interface PrivatePostgres {
  /** Superuser URL of its `postgres` database. */
  readonly url: string;
  readonly pid: number;
  /** What it is, for the report: version and the settings that matter to the figures. */
  readonly description: string;
}

interface Running extends PrivatePostgres {
  readonly child: ChildProcess;
  readonly dir: string;
  stopping: Promise<void> | null;
}

const START_MS = 60_000;
const STOP_MS = 10_000;
/** pg_stat_statements, and room for both systems' pools, the bench's clients and a replacement worker beside a killed one's dying sessions. */
const SETTINGS = ["shared_preload_libraries=pg_stat_statements", "pg_stat_statements.track=top", "max_connections=200", "listen_addresses=127.0.0.1"];

const running = new Set<Running>();

function binDir(): string | null {
  const candidates = [process.env.BENCH_PG_BINDIR];
  try {
    candidates.push(execFileSync("pg_config", ["--bindir"], { encoding: "utf8" }).trim());
  } catch {
    // no pg_config
  }
  for (const dir of candidates) {
    if (!dir) continue;
    try {
      accessSync(join(dir, "initdb"), constants.X_OK);
      accessSync(join(dir, "postgres"), constants.X_OK);
      return dir;
    } catch {
      // not here
    }
  }
  return null;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** The `postgres` OS user's ids when we are root (PostgreSQL refuses root), else nothing. */
function runAs(): { uid: number; gid: number } | Record<string, never> {
  if (process.getuid?.() !== 0) return {};
  const id = (flag: string) => Number.parseInt(execFileSync("id", [flag, "postgres"], { encoding: "utf8" }), 10);
  return { uid: id("-u"), gid: id("-g") };
}

/** Start a private server and wait until it answers; resolves with it, or with why it could not start (cleaned up). */
export async function startPrivatePostgres(): Promise<PrivatePostgres | string> {
  const bin = binDir();
  if (bin === null) return "no PostgreSQL binaries (neither BENCH_PG_BINDIR nor `pg_config --bindir` has initdb and postgres)";
  let ids: ReturnType<typeof runAs>;
  try {
    ids = runAs();
  } catch {
    return "running as root and there is no `postgres` OS user to run PostgreSQL as";
  }
  installCleanup();
  const dir = mkdtempSync(join(tmpdir(), "conveyor-bench-pg-"));
  const data = join(dir, "data");
  if ("uid" in ids) {
    chownSync(dir, ids.uid, ids.gid);
    chmodSync(dir, 0o700);
  }
  try {
    execFileSync(join(bin, "initdb"), ["-D", data, "-U", "postgres", "--auth=trust", "--encoding=UTF8", "--locale=C"], {
      ...ids,
      stdio: "pipe",
      env: { ...process.env, LC_MESSAGES: "C" },
    });
  } catch (error) {
    rmSync(dir, { recursive: true, force: true });
    const stderr = String((error as { stderr?: Buffer }).stderr ?? "").trim().split("\n").slice(-2).join(" / ");
    return `initdb failed: ${stderr || (error as Error).message}`;
  }
  const port = await freePort();
  const args = ["-D", data, "-p", String(port), "-k", dir, ...SETTINGS.flatMap((setting) => ["-c", setting])];
  const child = spawn(join(bin, "postgres"), args, { ...ids, detached: true, stdio: ["ignore", "ignore", "pipe"], env: { ...process.env, LC_MESSAGES: "C" } });
  let output = "";
  child.stderr!.on("data", (chunk: Buffer) => (output = (output + chunk.toString()).slice(-2_000)));
  const ended: { why: string | null } = { why: null };
  child.once("error", (error) => (ended.why ??= error.message));
  child.once("exit", (code, signal) => (ended.why ??= `exited (${signal ?? `code ${code}`})`));
  if (child.pid === undefined) {
    await sleep(0);
    rmSync(dir, { recursive: true, force: true });
    return `postgres did not start: ${ended.why ?? "no PID"}`;
  }
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  const server: Running = { url, pid: child.pid, child, dir, description: "", stopping: null };
  running.add(server);
  const deadline = Date.now() + START_MS;
  for (;;) {
    const client = new pg.Client({ connectionString: url, application_name: "conveyor-bench" });
    try {
      await client.connect();
      await client.query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
      const { rows } = await client.query(
        "SELECT current_setting('server_version') AS v, current_setting('fsync') AS f, current_setting('synchronous_commit') AS s, current_setting('shared_buffers') AS b",
      );
      await client.end();
      const { v, f, s, b } = rows[0];
      return Object.assign(server, { description: `PostgreSQL ${v} started by the bench on 127.0.0.1:${port} (fsync ${f}, synchronous_commit ${s}, shared_buffers ${b}, pg_stat_statements loaded)` });
    } catch (error) {
      await client.end().catch(() => undefined);
      if (ended.why !== null || Date.now() > deadline) {
        await stopServer(server);
        const log = output.trim().split("\n").slice(-3).join(" / ");
        return `postgres on port ${port} ${ended.why ?? `did not answer within ${START_MS} ms (${(error as Error).message})`}${log ? `: ${log}` : ""}`;
      }
      await sleep(100);
    }
  }
}

/** SIGINT (fast shutdown), SIGQUIT if it has not exited within STOP_MS, then remove its directory. Safe to call again. */
function stopServer(server: Running): Promise<void> {
  server.stopping ??= (async () => {
    const { child } = server;
    const exited = new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) resolve();
      else child.once("exit", () => resolve());
    });
    signal(server, "SIGINT");
    await withTimeout(exited, STOP_MS, "postgres did not stop").catch(() => {
      signal(server, "SIGQUIT");
      return withTimeout(exited, STOP_MS, "postgres did not quit").catch(() => undefined);
    });
    await rm(server.dir, { recursive: true, force: true });
    running.delete(server);
  })();
  return server.stopping;
}

/** The server `sharedPrivatePostgres` hands out, until stopPrivatePostgres(). */
let shared: Promise<PrivatePostgres | string> | null = null;

/**
 * One private server for every workload and system that asks (started on
 * the first call, then the same one): the batch and durable workloads,
 * BullMQ on PostgreSQL, the pressure workload. Resolves with why not when
 * none could start (asked again, it tries again). After
 * stopPrivatePostgres(), the next call starts a new one.
 */
export function sharedPrivatePostgres(): Promise<PrivatePostgres | string> {
  const current = (shared ??= startPrivatePostgres());
  void current.then((started) => {
    if (typeof started === "string" && shared === current) shared = null;
  });
  return current;
}

/** Stop every server started here. */
export async function stopPrivatePostgres(): Promise<void> {
  shared = null;
  await Promise.all([...running].map(stopServer));
}

let cleanupInstalled = false;

function installCleanup(): void {
  if (cleanupInstalled) return;
  cleanupInstalled = true;
  for (const sig of ["SIGINT", "SIGTERM"] as const) {
    const onSignal = () => {
      process.stderr.write(`${sig}: stopping the PostgreSQL the bench started\n`);
      void stopPrivatePostgres().finally(() => {
        process.removeListener(sig, onSignal);
        process.kill(process.pid, sig);
      });
    };
    process.on(sig, onSignal);
  }
  // An exit handler cannot wait: SIGQUIT (immediate shutdown; its backends
  // quit with it), then the directory goes.
  process.on("exit", () => {
    for (const server of running) {
      signal(server, "SIGQUIT");
      waitUntilGone(server.pid, 3_000);
      rmSync(server.dir, { recursive: true, force: true });
    }
  });
}

/**
 * CPU time (user and system, ms) the server's processes have used so far:
 * the postmaster's own and that of its children it has reaped, plus that
 * of its children alive now (backends, checkpointer, WAL writer,
 * autovacuum), read from /proc; null where there is no /proc. A backend
 * that exits between the two reads is missed or counted twice, so read it
 * when the measured clients are connected or gone, not on their way out.
 */
export function serverCpuMs(pid: number): number | null {
  const msPerTick = 1000 / 100; // USER_HZ is 100 on Linux
  const fields = (id: string | number): string[] | null => {
    try {
      // The fields after the command name, which is in parentheses and may hold spaces: state, ppid, … utime (index 11), stime, cutime, cstime.
      const stat = readFileSync(`/proc/${id}/stat`, "utf8");
      return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    } catch {
      return null;
    }
  };
  const own = fields(pid);
  if (own === null) return null;
  let ticks = Number(own[11]) + Number(own[12]) + Number(own[13]) + Number(own[14]);
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const child = fields(entry);
    if (child !== null && Number(child[1]) === pid) ticks += Number(child[11]) + Number(child[12]);
  }
  return ticks * msPerTick;
}

/** Send `sig` to the postmaster by its PID, unless Node has already reaped it; true when sent. */
function signal(server: Running, sig: NodeJS.Signals): boolean {
  if (server.child.exitCode !== null || server.child.signalCode !== null) return false;
  try {
    return process.kill(server.pid, sig);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ESRCH") throw error;
    return false;
  }
}

/** Block until `pid` is a zombie or gone, or `ms` passed. */
function waitUntilGone(pid: number, ms: number): void {
  const pause = new Int32Array(new SharedArrayBuffer(4));
  for (const deadline = Date.now() + ms; Date.now() < deadline; Atomics.wait(pause, 0, 0, 10)) {
    try {
      const state = /^\d+ \(.*\) (\S)/.exec(readFileSync(`/proc/${pid}/stat`, "utf8"))?.[1];
      if (state === "Z" || state === "X") return;
    } catch {
      return;
    }
  }
}
