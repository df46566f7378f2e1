import type { Logger } from "pino";
import type { AnyJobDefinition } from "../core/define-job.js";
import { Conveyor } from "../conveyor.js";
import { openDatabase } from "./database.js";
import { cliLogger } from "./logger.js";
import { loadJobs } from "./load-jobs.js";

export interface SessionOptions {
  schema: string;
  /** Path of a jobs module to load (workers, API, dev). */
  jobs?: string;
  /** Apply pending migrations first. Default true. */
  migrate?: boolean;
  /** Connections; short-lived admin commands need few. Default: the client's default. */
  poolSize?: number;
  /** Logs on stderr, at "warn" unless CONVEYOR_LOG_LEVEL is set: for commands whose stdout is their result. Default false. */
  quiet?: boolean;
  /**
   * Wait for the database before anything else, with back-off and a log line
   * per try (`conveyor.waitForDatabase`), and stop at once, exiting 0, on
   * SIGTERM or SIGINT meanwhile: for the long-running commands (`worker`,
   * `api`, `dev`), which may start before their database. Default false:
   * other commands fail at once.
   */
  waitForDatabase?: boolean;
}

/** Thrown by `withSession` when a signal stopped it while it waited for the database: the command exits 0 with nothing done. */
export class StoppedWhileWaiting extends Error {
  constructor(signal: NodeJS.Signals) {
    super(`stopped by ${signal} while waiting for the database`);
    this.name = "StoppedWhileWaiting";
  }
}

export interface Session {
  conveyor: Conveyor;
  log: Logger;
  jobs: AnyJobDefinition[];
  database: "env" | "embedded";
}

/**
 * What every CLI command does around its work: load the jobs module, open the
 * database (DATABASE_URL or the embedded server), make a client, migrate, and
 * close everything afterwards, also when the work throws.
 */
export async function withSession<T>(options: SessionOptions, work: (session: Session) => Promise<T>): Promise<T> {
  const log = cliLogger({ quiet: options.quiet });
  const jobs = options.jobs ? await loadJobs(options.jobs) : [];
  const database = await openDatabase(log);
  const conveyor = new Conveyor({
    connectionString: database.connectionString,
    pooler: database.pooler,
    ...(database.listenConnectionString ? { listenConnectionString: database.listenConnectionString } : {}),
    schema: options.schema,
    jobs,
    logger: log,
    ...(options.poolSize ? { poolSize: options.poolSize } : {}),
  });
  try {
    if (options.waitForDatabase) await waitUnlessSignalled(conveyor, log);
    if (options.migrate ?? true) await conveyor.migrate();
    return await work({ conveyor, log, jobs, database: database.source });
  } finally {
    await conveyor.close();
    await database.close();
  }
}

/** `conveyor.waitForDatabase()`, ended by SIGTERM or SIGINT (then StoppedWhileWaiting is thrown). */
async function waitUnlessSignalled(conveyor: Conveyor, log: Logger): Promise<void> {
  const stop = new AbortController();
  let stoppedBy: NodeJS.Signals | null = null;
  const onSignal = (signal: NodeJS.Signals) => {
    stoppedBy = signal;
    stop.abort();
  };
  process.on("SIGTERM", onSignal);
  process.on("SIGINT", onSignal);
  try {
    if (await conveyor.waitForDatabase({ signal: stop.signal })) return;
  } finally {
    process.off("SIGTERM", onSignal);
    process.off("SIGINT", onSignal);
  }
  log.info({ signal: stoppedBy }, "stopped while waiting for the database");
  throw new StoppedWhileWaiting(stoppedBy ?? "SIGTERM");
}

/**
 * Resolves on the first SIGTERM or SIGINT. Signals after it are not left to
 * Node's default (an instant exit that would strand running jobs until their
 * leases expire): the second calls `onRepeat` (a worker ends its grace period
 * and hands its jobs back now), a third exits at once.
 */
export function untilSignal(log: Logger, message: string, onRepeat: () => void = () => {}): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    let count = 0;
    const onSignal = (signal: NodeJS.Signals) => {
      count += 1;
      if (count === 1) {
        log.info({ signal }, message);
        resolve(signal);
      } else if (count === 2) {
        log.warn({ signal }, "second signal: stopping now (running jobs are handed back); a third exits at once");
        onRepeat();
      } else {
        log.warn({ signal }, "third signal: exiting at once");
        process.exit(1);
      }
    };
    process.on("SIGTERM", onSignal);
    process.on("SIGINT", onSignal);
  });
}
