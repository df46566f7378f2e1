/**
 * A redis-server the bench runs itself (bullmq-aof's durable Redis), on a
 * free port of 127.0.0.1 with its files in a fresh temporary directory.
 *
 * Every server started here is stopped by its PID and its directory removed
 * on every way the bench process ends: `stopRedisServers()` before the
 * bench's own `process.exit`; on SIGINT and SIGTERM (stopped, then the
 * signal re-raised so the exit status says what happened); and on any other
 * exit (a failure) killed synchronously in an 'exit' handler. Only a
 * SIGKILL of the bench leaves a server behind.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { accessSync, constants, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { rm } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { sleep, withTimeout } from "./clock.js";
import { REDIS_HOST, redisUnavailable } from "./redis.js";

export interface RedisServer {
  readonly port: number;
  readonly pid: number;
  /** Its working directory (the AOF), removed when it stops. */
  readonly dir: string;
}

interface Running extends RedisServer {
  readonly child: ChildProcess;
  stopping: Promise<void> | null;
}

/** How long a server may take to answer PING after it is spawned. */
const START_MS = 10_000;
/** How long a server may take to shut down after SIGTERM before it gets SIGKILL. */
const STOP_MS = 5_000;

const running = new Set<Running>();

/** Debian's binary, else the first `redis-server` on PATH, else null. */
function redisServerBinary(): string | null {
  const candidates = ["/usr/bin/redis-server", ...(process.env.PATH ?? "").split(delimiter).filter(Boolean).map((dir) => join(dir, "redis-server"))];
  for (const path of candidates) {
    try {
      accessSync(path, constants.X_OK);
      return path;
    } catch {
      // not here
    }
  }
  return null;
}

/** A port free on 127.0.0.1 when this returns: the one the kernel gives a listener on port 0. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, REDIS_HOST, () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/**
 * Start a redis-server with `options` (its command-line settings) and wait
 * until it answers PING. Resolves with the server, or with why it could not
 * start (no binary, it exited, no answer in time), having cleaned up.
 */
export async function startRedisServer(options: readonly string[]): Promise<RedisServer | string> {
  const binary = redisServerBinary();
  if (binary === null) return "no redis-server binary (neither /usr/bin/redis-server nor one on PATH)";
  installCleanup();
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), "conveyor-bench-redis-"));
  const args = [...options, "--port", String(port), "--bind", REDIS_HOST, "--protected-mode", "no", "--daemonize", "no", "--dir", dir];
  const child = spawn(binary, args, { stdio: ["ignore", "pipe", "pipe"] });
  /** The end of its log (stdout) and errors (stderr), for a failure's reason; read all along so it never blocks on a full pipe. */
  let output = "";
  const keep = (data: Buffer) => (output = (output + data.toString()).slice(-2_000));
  child.stdout!.on("data", keep);
  child.stderr!.on("data", keep);
  /** Why it ended, once it has (set by the child's events). */
  const ended: { why: string | null } = { why: null };
  child.once("error", (error) => (ended.why ??= error.message));
  child.once("exit", (code, signal) => (ended.why ??= `exited (${signal ?? `code ${code}`})`));
  if (child.pid === undefined) {
    await sleep(0); // the spawn error arrives on the next tick
    rmSync(dir, { recursive: true, force: true });
    return `${binary} did not start: ${ended.why ?? "no PID"}`;
  }
  const server: Running = { port, pid: child.pid, dir, child, stopping: null };
  running.add(server);
  const deadline = Date.now() + START_MS;
  for (;;) {
    const reason = ended.why ?? (await redisUnavailable(port, 500));
    if (reason === null) return server;
    if (ended.why !== null || Date.now() > deadline) {
      await stopServer(server);
      const log = output.trim().split("\n").slice(-3).join(" / ");
      return `${binary} on port ${port} ${ended.why ?? `did not answer PING within ${START_MS} ms`}${log ? `: ${log}` : ""}`;
    }
    await sleep(50);
  }
}

/** SIGTERM, SIGKILL if it has not exited within STOP_MS, then remove its directory. Safe to call again. */
function stopServer(server: Running): Promise<void> {
  server.stopping ??= (async () => {
    const { child } = server;
    const exited = new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) resolve();
      else child.once("exit", () => resolve());
    });
    signal(server, "SIGTERM");
    await withTimeout(exited, STOP_MS, "redis-server did not stop").catch(() => {
      signal(server, "SIGKILL");
      return exited;
    });
    await rm(server.dir, { recursive: true, force: true });
    running.delete(server);
  })();
  return server.stopping;
}

/** Stop every server started here (see the top of this file). */
export async function stopRedisServers(): Promise<void> {
  await Promise.all([...running].map(stopServer));
}

let cleanupInstalled = false;

function installCleanup(): void {
  if (cleanupInstalled) return;
  cleanupInstalled = true;
  for (const sig of ["SIGINT", "SIGTERM"] as const) {
    const onSignal = () => {
      process.stderr.write(`${sig}: stopping the redis-server the bench started\n`);
      void stopRedisServers().finally(() => {
        process.removeListener(sig, onSignal);
        process.kill(process.pid, sig);
      });
    };
    process.on(sig, onSignal);
  }
  // An exit handler cannot wait, so no graceful shutdown here: SIGKILL, which
  // ends the server at once, so it writes nothing more into the directory
  // removed right after (once it is a zombie or gone).
  process.on("exit", () => {
    for (const server of running) {
      if (signal(server, "SIGKILL")) waitUntilDead(server.pid, 1_000);
      rmSync(server.dir, { recursive: true, force: true });
    }
  });
}

/**
 * Send `sig` to the server by its PID, unless Node has already reaped it
 * (its PID may then belong to another process); one that ended in between
 * (it may stop on its own: a terminal's Ctrl-C reaches it too) is no error.
 * True when the signal was sent.
 */
function signal(server: Running, sig: NodeJS.Signals): boolean {
  if (server.child.exitCode !== null || server.child.signalCode !== null) return false;
  try {
    return process.kill(server.pid, sig);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ESRCH") throw error;
    return false;
  }
}

/** Block until `pid` has terminated (a zombie or gone), or `ms` passed. */
function waitUntilDead(pid: number, ms: number): void {
  const pause = new Int32Array(new SharedArrayBuffer(4));
  for (const deadline = Date.now() + ms; Date.now() < deadline; Atomics.wait(pause, 0, 0, 10)) {
    try {
      const state = /^\d+ \(.*\) (\S)/.exec(readFileSync(`/proc/${pid}/stat`, "utf8"))?.[1];
      if (state === "Z" || state === "X") return;
    } catch {
      return; // gone (or not Linux)
    }
  }
}
