import type { Logger } from "pino";
import { DEFAULT_BATCH_MAX_WAIT_MS, MAX_BATCH_SIZE, MAX_BATCH_WAIT_MS } from "./defaults.js";
import { ConfigError } from "./errors.js";
import { checkKnownFields, quoted } from "./validate.js";
import type { Queryable } from "./queryable.js";

/** `defineJob({ batch })`: how a kind's jobs are gathered into batches for its `batchHandler`. */
export interface BatchOptions<P> {
  /**
   * Most jobs in one batch, 1 to `MAX_BATCH_SIZE` (1,000). A batch also
   * never holds more jobs than the worker's `concurrency`: every job of a
   * batch holds a slot from its claim to its end.
   */
  maxSize: number;
  /**
   * How long a batch waits for more jobs after its first one, in ms, 0 to
   * `MAX_BATCH_WAIT_MS` (60 s). A batch leaves when it is full, when its
   * wait is over, when the worker stops, or sooner when waiting could not
   * fill it: every slot of the worker held, and fewer of them held by
   * running work (the slots that will free) than the batch lacks.
   * @defaultValue `DEFAULT_BATCH_MAX_WAIT_MS` (50)
   */
  maxWaitMs?: number;
  /**
   * Form batches per key, from each job's parsed payload, e.g.
   * `(p) => p.customerId`: one batch holds jobs of one key only. Default:
   * none (any of the kind's jobs may share a batch).
   */
  key?: (payload: P) => string;
}

/** One job of a batch, as the batch handler receives it. */
export interface BatchJob<P> {
  /** The job's id. */
  readonly id: string;
  /** Its payload, as the schema parsed it. */
  readonly payload: P;
  readonly tenant: string;
  readonly queue: string;
  /** This attempt's number, from 1. */
  readonly attempt: number;
  readonly maxAttempts: number;
  /** This attempt's id: every write about the job is fenced on it. */
  readonly executionId: string;
  /**
   * Aborts when this job must stop: its cancel, its lease lost, its time
   * limit, or the worker shutting down past its grace period. The other
   * jobs of the batch go on.
   */
  readonly signal: AbortSignal;
}

/** Everything a batch handler receives. */
export interface BatchContext<P> {
  /** The batch's jobs, in claim order. */
  readonly jobs: ReadonlyArray<BatchJob<P>>;
  /**
   * Aborts when the whole batch must stop: the worker shuts down past its
   * grace period, or every job of the batch has aborted.
   */
  readonly signal: AbortSignal;
  /** This batch's id, recorded with each job's attempt. */
  readonly batchId: string;
  /** The worker running the batch. */
  readonly workerId: string;
  /** A child logger carrying the batch id, kind and size. */
  readonly log: Logger;
  /**
   * Run `work` in one database transaction on a connection of Conveyor's
   * pool, and complete in the same transaction every job whose outcome
   * `work` returns as a success: `work` must resolve to the batch's
   * outcomes (as the handler returns them). Its writes and those
   * completions commit together, each fenced on its job's execution id, or
   * none do: when any of those jobs is no longer this worker's (its lease
   * was lost), the transaction rolls back and `LeaseLostError` is thrown.
   * Jobs whose outcome is an error are written after the handler returns,
   * as ever. One call per batch.
   */
  transaction<T extends ReadonlyArray<unknown>>(work: (tx: Queryable) => Promise<T>): Promise<T>;
}

/**
 * What a batch handler returns for each job, in the order of `jobs`: the
 * job's result (any JSON value, or undefined), or an `Error` to fail it: a
 * `PermanentError` sends it to the dead-letter queue, a `RetryAfter`
 * (`retryAfter(ms)`) runs it again later without counting the attempt, and
 * any other error retries it after the kind's backoff. Each job keeps its
 * own attempts, backoff and dead letter.
 */
export type BatchOutcome<R> = R | Error;

/** Runs a batch of jobs; throwing fails every job of the batch. */
export type BatchHandler<P, R = unknown> = (context: BatchContext<P>) => Promise<ReadonlyArray<BatchOutcome<R>>> | ReadonlyArray<BatchOutcome<R>>;

/** `BatchOptions` checked, with its defaults, and the handler. */
export interface ResolvedBatch<P = unknown, R = unknown> {
  readonly maxSize: number;
  readonly maxWaitMs: number;
  readonly key: ((payload: P) => string) | null;
  readonly handler: BatchHandler<P, R>;
}

/** Check a kind's batch options (`where` names the kind in errors). */
export function resolveBatch<P, R>(options: BatchOptions<P> | undefined, handler: BatchHandler<P, R> | undefined, where: string): ResolvedBatch<P, R> | null {
  if (options === undefined && handler === undefined) return null;
  if (typeof handler !== "function") throw new ConfigError(`${where}: batch needs batchHandler, a function that takes the batch's jobs`);
  if (typeof options !== "object" || options === null) throw new ConfigError(`${where}: batchHandler needs batch: { maxSize, maxWaitMs?, key? }`);
  checkKnownFields(options, { maxSize: true, maxWaitMs: true, key: true }, "a batch option", { path: `${where}: batch`, ErrorType: ConfigError });
  const { maxSize, maxWaitMs = DEFAULT_BATCH_MAX_WAIT_MS, key } = options;
  if (!Number.isInteger(maxSize) || maxSize < 1 || maxSize > MAX_BATCH_SIZE) {
    throw new ConfigError(`${where}: batch.maxSize must be an integer from 1 to ${MAX_BATCH_SIZE}, got ${quoted(maxSize)}`);
  }
  if (typeof maxWaitMs !== "number" || !Number.isFinite(maxWaitMs) || maxWaitMs < 0 || maxWaitMs > MAX_BATCH_WAIT_MS) {
    throw new ConfigError(`${where}: batch.maxWaitMs must be a number of ms from 0 to ${MAX_BATCH_WAIT_MS}, got ${quoted(maxWaitMs)}`);
  }
  if (key !== undefined && typeof key !== "function") throw new ConfigError(`${where}: batch.key must be a function of the payload returning the key`);
  return Object.freeze({ maxSize, maxWaitMs, key: key ?? null, handler });
}

/**
 * The outcome of job `index` among a batch handler's returned `outcomes`;
 * throws (failing the job) when the handler broke the contract: not an
 * array of one outcome per job.
 */
export function outcomeOf(outcomes: unknown, index: number, size: number): unknown {
  if (!Array.isArray(outcomes) || outcomes.length !== size) {
    const got = Array.isArray(outcomes) ? `an array of ${outcomes.length}` : typeof outcomes;
    throw new TypeError(`a batch handler must return an array of one outcome per job (${size}), got ${got}`);
  }
  const outcome: unknown = outcomes[index];
  if (outcome instanceof Error) throw outcome;
  return outcome;
}
