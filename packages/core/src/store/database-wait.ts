import { retryDelayMs } from "../core/backoff.js";
import { DATABASE_WAIT_JITTER, DATABASE_WAIT_MAX_MS, DATABASE_WAIT_MIN_MS } from "../core/defaults.js";
import type { Queryable } from "./db.js";
import { isConnectionError } from "./pg-errors.js";

/** One failed try to reach the database, as `waitForDatabase` reports it before waiting. */
export interface DatabaseWait {
  /** The try that failed, from 1. */
  attempt: number;
  /** The error's code: a SQLSTATE (`57P03`: the server is starting up) or a socket error (`ECONNREFUSED`); `unknown` when it has none. */
  code: string;
  /** Its message. */
  message: string;
  /** How long the wait before the next try is, in ms. */
  retryInMs: number;
}

/** What `waitForDatabase` needs besides the database: when to stop, and whom to tell of each wait. */
export interface DatabaseWaitOptions {
  /** Stop waiting when this aborts: the call then resolves `false` at once. */
  signal?: AbortSignal;
  /** Told of each failed try before its wait (one log line each). */
  onWait?: (wait: DatabaseWait) => void;
  /** Source of the waits' jitter. Default `Math.random`. */
  random?: () => number;
}

const BACKOFF = { baseMs: DATABASE_WAIT_MIN_MS, capMs: DATABASE_WAIT_MAX_MS, jitter: DATABASE_WAIT_JITTER };

/**
 * Resolve `true` once `db` answers a `SELECT 1`. A try that fails to
 * connect (refused, reset, unreachable, timed out, the server starting up
 * or shutting down, too many connections) is retried after a wait that
 * doubles from `DATABASE_WAIT_MIN_MS` to `DATABASE_WAIT_MAX_MS`, jittered;
 * any other error (a wrong password, a missing database) is thrown at once,
 * since waiting cannot mend it. Resolves `false` as soon as `signal`
 * aborts, without waiting for a try in flight.
 */
export async function waitForDatabase(db: Queryable, options: DatabaseWaitOptions = {}): Promise<boolean> {
  const { signal, onWait, random } = options;
  for (let attempt = 1; ; attempt += 1) {
    if (signal?.aborted) return false;
    const tried = await untilAborted(
      db.query("SELECT 1").then(
        () => null,
        (error: unknown) => error,
      ),
      signal,
    );
    if (tried === ABORTED) return false;
    if (tried === null) return true;
    if (!isConnectionError(tried)) throw tried;
    const retryInMs = retryDelayMs(BACKOFF, attempt, random);
    onWait?.({ attempt, code: codeOf(tried), message: tried instanceof Error ? tried.message : String(tried), retryInMs });
    if (!(await pause(retryInMs, signal))) return false;
  }
}

const ABORTED = Symbol("aborted");

/** Wait `ms`; false when `signal` aborted first (the timer is cleared then, so nothing keeps the process alive). */
function pause(ms: number, signal: AbortSignal | undefined): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve(false);
    const onAbort = () => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve(true);
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** `work`'s value, or ABORTED as soon as `signal` aborts (`work` goes on unobserved but handled). */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal | undefined): Promise<T | typeof ABORTED> {
  if (!signal) return work;
  if (signal.aborted) return Promise.resolve(ABORTED);
  return new Promise((resolve, reject) => {
    const onAbort = () => resolve(ABORTED);
    signal.addEventListener("abort", onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

/** The code of a driver error or of the error it wraps. */
function codeOf(error: unknown): string {
  for (let current = error; current; current = (current as { cause?: unknown }).cause) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === "string" && code !== "") return code;
    // A host list's connection may fail with AggregateError (one error per host).
    const first = (current as { errors?: unknown[] }).errors?.[0];
    if (first) return codeOf(first);
  }
  return "unknown";
}
