import type { StandardSchemaV1 } from "@standard-schema/spec";
import type { Logger } from "pino";
import { type BackoffPolicy, type ResolvedBackoff, resolveBackoff } from "./backoff.js";
import {
  DEFAULT_MAX_ATTEMPTS,
  DEFAULT_PRIORITY,
  DEFAULT_QUEUE,
  DEFAULT_TIMEOUT_MS,
} from "./defaults.js";
import { ConfigError } from "./errors.js";
import type { RetryAfter } from "./errors.js";
import { type CronOption, type ResolvedCronSchedule, resolveSchedules } from "./schedules.js";
import { type KindRetention, type ResolvedKindRetention, resolveKindRetention } from "./retention.js";
import type { Queryable } from "./queryable.js";
import type { DependencyOutcome, DependencySummary } from "./flows.js";
import type { DurableFunctions } from "./steps.js";
import { type BatchContext, type BatchHandler, type BatchOptions, outcomeOf, type ResolvedBatch, resolveBatch } from "./batch.js";
import { checkKnownFields, checkMaxAttempts, checkName, checkPriority, type KnownFields, quoted } from "./validate.js";

/** What a handler knows about the job it is running. */
export interface JobInfo {
  /** The job's id (a UUIDv7). */
  id: string;
  /** The job's kind. */
  kind: string;
  /** The tenant the job belongs to. */
  tenant: string;
  /** The queue the job was taken from. */
  queue: string;
  /** 1 for the first attempt. */
  attempt: number;
  /** Attempts allowed before the job is dead-lettered. */
  maxAttempts: number;
  /** Id of this attempt; every write about it is fenced on this id. */
  executionId: string;
  /** The worker running this attempt. */
  workerId: string;
  /**
   * For a job a cron schedule enqueued: the schedule's name and the tick's
   * time (the same on every attempt, unlike `run_at`, which retries move).
   * Null for other jobs.
   */
  cronTick: {
    /** The schedule's name. */
    schedule: string;
    /** The tick's time. */
    at: Date;
  } | null;
}

/**
 * Everything a handler receives. `step`, `sleep` and `waitForEvent` make it
 * a durable workflow (core/steps.ts; docs/durable-execution.md).
 */
export interface JobContext<P> extends DurableFunctions {
  /** The payload, as the schema parsed it. */
  payload: P;
  /**
   * Aborts when the job must stop: cancellation was requested, the lease was
   * lost (another worker may now own the job), the attempt timed out, or the
   * worker is shutting down past its grace period. `signal.reason` says which.
   */
  signal: AbortSignal;
  /** The job being run: ids, kind, tenant, queue, attempt. */
  job: JobInfo;
  /** A child logger carrying job id, kind, attempt, execution id and worker id. */
  log: Logger;
  /**
   * Renew this job's lease now, for a long step between regular heartbeats.
   * Resolves false (and aborts `signal`) when the lease was already lost.
   */
  heartbeat(): Promise<boolean>;
  /**
   * Report progress: any JSON value up to `MAX_PROGRESS_BYTES` (16 KiB),
   * stored on the job as `progress` (fenced on this attempt's execution id).
   * Writes are coalesced: at most one in flight and one per
   * `worker.progressIntervalMs` (default `DEFAULT_PROGRESS_INTERVAL_MS`,
   * 500 ms); a newer value replaces one still waiting, and the last one is
   * written before the attempt ends. Resolves true once this value or a newer
   * one is stored, false when the job is no longer this attempt's (the lease
   * was lost; `signal` aborts as on a failed heartbeat) or the attempt ended.
   * Never rejects; a value that is not JSON or too large throws
   * `ValidationError` at once.
   */
  progress(value: unknown): Promise<boolean>;
  /**
   * Run `work` in a database transaction on a connection of Conveyor's pool,
   * and complete the job in the same transaction: `work`'s writes and the
   * job's success commit together or not at all. What `work` returns is kept
   * as the job's `result`. The completion is fenced on this attempt's
   * execution id: when the lease was lost (the job was reclaimed, perhaps run
   * by another worker), the transaction is rolled back and `LeaseLostError`
   * thrown, so a stale owner's writes never commit. If `work` throws, or
   * `signal` aborts before the commit, it is rolled back and the error thrown.
   * After a commit the attempt has succeeded, whatever the handler does next;
   * a second call then throws `ConflictError` (as does a call while one is
   * open; after a rollback the handler may try again).
   */
  transaction<T>(work: (tx: Queryable) => Promise<T>): Promise<T>;
  /**
   * This job's dependencies (`dependsOn`, flows, a batch's members), each
   * with how it ended and what it returned, in id order; empty when it has
   * none. Read from the database at each call.
   */
  dependencies(): Promise<DependencyOutcome[]>;
  /**
   * The results of this job's dependencies of `definition`'s kind that
   * succeeded, typed by that definition's handler, in id order.
   */
  resultsOf<D extends AnyJobDefinition>(definition: D): Promise<Array<ResultOf<D>>>;
  /** Counts of this job's dependencies by how they ended and the ids of those that failed: what a batch callback reads. */
  dependencySummary(): Promise<DependencySummary>;
}

/** A handler returns a JSON-serialisable result (kept on the job), nothing, or a `RetryAfter`. */
export type JobHandler<P, R = unknown> = (context: JobContext<P>) => Promise<R | RetryAfter> | R | RetryAfter;

/**
 * What `defineJob` takes: a kind, its payload schema, its handler (or, for
 * a kind that takes its jobs in batches, `batch` and `batchHandler`), and
 * its defaults.
 */
export type JobDefinitionInput<S extends StandardSchemaV1, R> = JobKindInput<S> &
  (
    | {
        /** Runs one attempt with the parsed payload; throw to fail it (`PermanentError`: no retry), return `RetryAfter` to run it later. */
        handler: JobHandler<StandardSchemaV1.InferOutput<S>, R>;
        batch?: never;
        batchHandler?: never;
      }
    | {
        handler?: never;
        /** Take this kind's jobs in batches: how big, how long a batch waits to fill, and by which key (docs/jobs.md#batch-handlers). */
        batch: BatchOptions<StandardSchemaV1.InferOutput<S>>;
        /**
         * Runs one attempt of each job of a batch and returns one outcome per
         * job, in order: its result, or an `Error` to fail it
         * (`PermanentError`, `retryAfter(ms)`). Throwing fails every job.
         */
        batchHandler: BatchHandler<StandardSchemaV1.InferOutput<S>, R>;
      }
  );

/** The options of `defineJob` every kind has, whatever its handler. */
export interface JobKindInput<S extends StandardSchemaV1> {
  /** Unique name of the job kind, e.g. `email.send`. Letters, digits and `_ . : - /`. */
  kind: string;
  /** Payload validator: any Standard Schema (zod 4, valibot, arktype…). */
  schema: S;
  /**
   * Attempts before the job is dead-lettered.
   * @defaultValue `DEFAULT_MAX_ATTEMPTS` (25)
   */
  maxAttempts?: number;
  /** Retry delays. Defaults in `DEFAULT_BACKOFF_*` (1 s base, 1 h cap, 20% jitter). */
  backoff?: BackoffPolicy;
  /**
   * Time limit per attempt in ms; 0 for none.
   * @defaultValue `DEFAULT_TIMEOUT_MS` (0)
   */
  timeoutMs?: number;
  /**
   * Queue jobs of this kind go to unless the enqueue names another.
   * @defaultValue `DEFAULT_QUEUE` ("default")
   */
  queue?: string;
  /**
   * Priority of this kind's jobs unless the enqueue gives one; lower runs
   * first, `MIN_PRIORITY` (-1000) to `MAX_PRIORITY` (1000).
   * @defaultValue `DEFAULT_PRIORITY` (0)
   */
  priority?: number;
  /**
   * Enqueue this kind periodically: a cron expression, a schedule
   * `{ name, cron, timezone, payload, tenant, queue, priority, missed }`, or a
   * list of them. Workers running the kind enqueue each tick once. Default: none.
   */
  cron?: CronOption<StandardSchemaV1.InferInput<S>>;
  /**
   * The limit key of each job, from its parsed payload, e.g.
   * `(p) => "stripe:" + p.accountId`: jobs of one key share the queue's
   * limits per key. An enqueue's own `limitKey` wins. Default: none.
   */
  limitKey?: (payload: StandardSchemaV1.InferOutput<S>) => string;
  /**
   * How long this kind's finished jobs and dead letters are kept, in place
   * of the pruning worker's `retention` ages (and `prune()`'s) for this
   * kind: e.g. `{ finishedMs: 60 * 60 * 1000 }` for a noisy kind, or 90 days
   * for one kept for audits. Applied by every client that has the kind
   * registered (`new Conveyor({ jobs })`); a prune by one that does not
   * uses its own ages for it. `{ keepSucceeded: false }` keeps none of its
   * succeeded jobs: each success deletes its job. Default: none (the
   * pruner's ages, succeeded jobs kept).
   */
  retention?: KindRetention;
}

/** A validated, frozen job kind. Pass it to `new Conveyor({ jobs })` and to `enqueue`. */
export interface JobDefinition<S extends StandardSchemaV1 = StandardSchemaV1, R = unknown> {
  /** Name of the job kind. */
  readonly kind: string;
  /** Payload validator. */
  readonly schema: S;
  /** The handler: for a batch kind, one that runs a batch of the one job it is given. */
  readonly handler: JobHandler<StandardSchemaV1.InferOutput<S>, R>;
  /** How the kind takes its jobs in batches, with its batch handler; null for a kind with a handler per job (the default). */
  readonly batch: ResolvedBatch<StandardSchemaV1.InferOutput<S>, R> | null;
  /** Attempts before a job is dead-lettered (default `DEFAULT_MAX_ATTEMPTS`, 25). */
  readonly maxAttempts: number;
  /** Retry delays, defaults applied (1 s base, 1 h cap, 20% jitter). */
  readonly backoff: ResolvedBackoff;
  /** Time limit per attempt in ms; 0 for none (the default). */
  readonly timeoutMs: number;
  /** Queue jobs of this kind go to by default (default `"default"`). */
  readonly queue: string;
  /** Priority jobs of this kind get by default (default 0). */
  readonly priority: number;
  /** Cron schedules of this kind, validated (empty when it has none). */
  readonly schedules: readonly ResolvedCronSchedule[];
  /** Derives a job's limit key from its parsed payload; null when the kind has none (the default). */
  readonly limitKey: ((payload: StandardSchemaV1.InferOutput<S>) => string) | null;
  /** This kind's own retention ages; null when it keeps the pruner's (the default). */
  readonly retention: ResolvedKindRetention | null;
}

/** Any job definition, whatever its payload type. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyJobDefinition = JobDefinition<any, any>;

/** Payload type accepted by `enqueue` for a definition. */
export type PayloadInput<D> = D extends JobDefinition<infer S, unknown> ? StandardSchemaV1.InferInput<S> : never;

/** What a definition's handler resolves to when it succeeds (a `RetryAfter` is not a result). */
export type ResultOf<D> = D extends {
  /** The definition's handler, whose return type is read. */
  readonly handler: (...args: never[]) => infer R;
}
  ? Exclude<Awaited<R>, RetryAfter>
  : never;

/** Payload type a definition's schema produces: what is stored, and what `enqueue` returns and the handler receives. */
export type PayloadOutput<D> = D extends JobDefinition<infer S, unknown> ? StandardSchemaV1.InferOutput<S> : never;

const DEFINITION_FIELDS: KnownFields<JobDefinitionInput<StandardSchemaV1, unknown>> = {
  kind: true,
  schema: true,
  maxAttempts: true,
  backoff: true,
  timeoutMs: true,
  queue: true,
  priority: true,
  cron: true,
  limitKey: true,
  retention: true,
  handler: true,
  batch: true,
  batchHandler: true,
};

/**
 * Define a job kind: its name, payload schema and handler.
 *
 * @example
 * const sendEmail = defineJob({
 *   kind: "email.send",
 *   schema: z.object({ to: z.email(), subject: z.string() }),
 *   maxAttempts: 5,
 *   async handler({ payload, signal }) {
 *     await mailer.send(payload, { signal });
 *   },
 * });
 */
export function defineJob<S extends StandardSchemaV1, R = unknown>(input: JobDefinitionInput<S, R>): JobDefinition<S, R> {
  if (input === null || typeof input !== "object") throw new ConfigError("defineJob takes { kind, schema, handler, … }");
  checkName(input.kind, "kind");
  const where = `job "${input.kind}"`;
  checkKnownFields(input, DEFINITION_FIELDS, "an option of defineJob", { path: `${where}:`, ErrorType: ConfigError });
  if (!input.schema || typeof input.schema !== "object" || !("~standard" in input.schema)) {
    throw new ConfigError(`${where}: schema must be a Standard Schema validator (zod 4, valibot, arktype…)`);
  }
  const batch = resolveBatch(input.batch, input.batchHandler, where);
  if (batch && input.handler !== undefined) throw new ConfigError(`${where}: give handler or batchHandler, not both`);
  if (!batch && typeof input.handler !== "function") throw new ConfigError(`${where}: handler must be a function`);
  const maxAttempts = input.maxAttempts ?? DEFAULT_MAX_ATTEMPTS;
  checkMaxAttempts(maxAttempts, `${where}: maxAttempts`, ConfigError);
  const timeoutMs = input.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  if (!Number.isFinite(timeoutMs) || timeoutMs < 0) {
    throw new ConfigError(`${where}: timeoutMs must be a number >= 0 (0 for none), got ${quoted(timeoutMs)}`);
  }
  const queue = input.queue ?? DEFAULT_QUEUE;
  checkName(queue, `${where}: queue`, ConfigError);
  const priority = input.priority ?? DEFAULT_PRIORITY;
  checkPriority(priority, `${where}: priority`, ConfigError);
  if (input.limitKey !== undefined && typeof input.limitKey !== "function") {
    throw new ConfigError(`${where}: limitKey must be a function of the payload returning the key`);
  }
  return Object.freeze({
    kind: input.kind,
    schema: input.schema,
    handler: batch ? batchOfOne(batch) : input.handler!,
    batch,
    maxAttempts,
    backoff: resolveBackoff(input.backoff, `${where}: backoff`),
    timeoutMs,
    queue,
    priority,
    schedules: resolveSchedules(input.cron, { kind: input.kind, schema: input.schema, queue, priority }),
    limitKey: input.limitKey ?? null,
    retention: resolveKindRetention(input.retention, `${where}: retention.`, (message) => new ConfigError(message)),
  });
}


/**
 * A batch kind's handler for one job: its batch handler run on a batch of
 * that job alone (what `runHandler` calls), the job's signal serving as the
 * batch's, and its transaction the job's (an error outcome rolls it back).
 */
function batchOfOne<P, R>(batch: ResolvedBatch<P, R>): JobHandler<P, R> {
  return async (ctx) => {
    const context: BatchContext<P> = {
      jobs: [{ ...ctx.job, payload: ctx.payload, signal: ctx.signal }],
      signal: ctx.signal,
      batchId: ctx.job.executionId,
      workerId: ctx.job.workerId,
      log: ctx.log,
      transaction: async <T extends ReadonlyArray<unknown>>(work: (tx: Queryable) => Promise<T>): Promise<T> => {
        let outcomes: T | undefined;
        await ctx.transaction(async (tx) => outcomeOf((outcomes = await work(tx)), 0, 1));
        return outcomes!;
      },
    };
    return outcomeOf(await batch.handler(context), 0, 1) as R;
  };
}
