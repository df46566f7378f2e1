import {
  DEFAULT_EVENT_RETENTION_MS,
  DEFAULT_KEEP_SUCCEEDED,
  DEFAULT_RETENTION_BATCH_SIZE,
  DEFAULT_RETENTION_DEAD_LETTER_MS,
  DEFAULT_RETENTION_FINISHED_MS,
  MAX_RETENTION_AGE_MS,
  MAX_RETENTION_BATCH_SIZE,
} from "./defaults.js";
import { type KnownFields, unknownField } from "./validate.js";

/** What `conveyor.prune()` deletes. */
export interface PruneOptions {
  /**
   * Delete succeeded and cancelled jobs that finished on a day (UTC) that
   * ended longer ago than this: history is dropped a whole day at a time,
   * so a job is kept at least this long and at most a day longer.
   * @defaultValue `DEFAULT_RETENTION_FINISHED_MS` (7 days)
   */
  finishedMs?: number;
  /**
   * Delete dead letters (with their dead jobs) older than this.
   * @defaultValue `DEFAULT_RETENTION_DEAD_LETTER_MS` (30 days)
   */
  deadLetterMs?: number;
  /**
   * Delete events (`sendEvent`) sent longer ago than this: a wait reached
   * later no longer receives them. Waits that received one keep its payload.
   * @defaultValue `DEFAULT_EVENT_RETENTION_MS` (7 days)
   */
  eventsMs?: number;
  /**
   * Rows per delete statement, 1..10,000.
   * @defaultValue `DEFAULT_RETENTION_BATCH_SIZE` (1000)
   */
  batchSize?: number;
  /** Stop between batches once aborted; the counts so far are returned. */
  signal?: AbortSignal;
}

/** Rows a prune deleted. Executions went with their jobs and are not counted. */
export interface PruneResult {
  /** Succeeded and cancelled jobs deleted. */
  jobs: number;
  /** Dead-letter entries deleted, each with its dead job. */
  deadLetters: number;
  /** Flows and batches deleted: those older than the finished-job age whose jobs are all gone. */
  flows: number;
  /** Events deleted: those sent longer ago than `eventsMs`. */
  events: number;
}

/** What one prune deletes: ages and batch size, validated. */
export interface RetentionPolicy {
  /** Succeeded/cancelled jobs are deleted once the day (UTC) they finished on ended longer ago than this. */
  readonly finishedMs: number;
  /** Dead letters (and their dead jobs) older than this are deleted. */
  readonly deadLetterMs: number;
  /** Events sent longer ago than this are deleted. */
  readonly eventsMs: number;
  /** Rows per delete statement. */
  readonly batchSize: number;
}

/**
 * How long one job kind's rows are kept (`defineJob({ retention })`), in
 * place of the pruning worker's (or `prune()`'s) ages for that kind.
 */
export interface KindRetention {
  /**
   * Delete this kind's succeeded and cancelled jobs finished longer ago
   * than this, 0 to `MAX_RETENTION_AGE_MS`. Unset: the pruning worker's
   * (or `prune()`'s) `finishedMs`, by default:
   * @defaultValue `DEFAULT_RETENTION_FINISHED_MS` (7 days)
   */
  finishedMs?: number;
  /**
   * Delete this kind's dead letters (with their dead jobs) older than this,
   * 0 to `MAX_RETENTION_AGE_MS`. Unset: the pruning worker's (or
   * `prune()`'s) `deadLetterMs`, by default:
   * @defaultValue `DEFAULT_RETENTION_DEAD_LETTER_MS` (30 days)
   */
  deadLetterMs?: number;
  /**
   * Whether this kind's succeeded jobs are kept in history. `false`: a
   * success deletes the job, with its earlier attempts, steps and
   * idempotency key, in the completion's own statement, and writes no
   * history row, as BullMQ's `removeOnComplete` and graphile-worker do. Its
   * idempotency key is then free: an enqueue under it makes a new job. A
   * job that other jobs depend on, or that `waitFor` awaits, is kept all
   * the same, so that its dependents and waiters read its end. Failures,
   * cancels and dead letters are kept as for any kind.
   * @defaultValue `DEFAULT_KEEP_SUCCEEDED` (true)
   */
  keepSucceeded?: boolean;
}

/** A kind's retention, checked: null where the kind keeps the pruner's age and its succeeded jobs. */
export interface ResolvedKindRetention {
  /** As `KindRetention.finishedMs`; null: the pruner's. */
  readonly finishedMs: number | null;
  /** As `KindRetention.deadLetterMs`; null: the pruner's. */
  readonly deadLetterMs: number | null;
  /** As `KindRetention.keepSucceeded`. */
  readonly keepSucceeded: boolean;
}

/** Whether a kind of `retention` keeps its succeeded jobs in history (KindRetention.keepSucceeded). */
export function keepsSucceeded(retention: ResolvedKindRetention | null): boolean {
  return retention?.keepSucceeded ?? DEFAULT_KEEP_SUCCEEDED;
}

const KIND_RETENTION_FIELDS: KnownFields<KindRetention> = { finishedMs: true, deadLetterMs: true, keepSucceeded: true };

/** Check a definition's `retention`, naming the field as `${prefix}${field}`; null when it sets none. */
export function resolveKindRetention(input: KindRetention | undefined, prefix: string, refuse: RefuseField): ResolvedKindRetention | null {
  if (input === undefined) return null;
  if (typeof input !== "object" || input === null) throw refuse(`${prefix.slice(0, -1)} must be an object { finishedMs?, deadLetterMs? }, got ${String(input)}`, prefix.slice(0, -1));
  const unknown = unknownField(input, KIND_RETENTION_FIELDS);
  if (unknown !== undefined) {
    throw refuse(`${prefix}${unknown} is not a retention setting of a job kind (known: ${Object.keys(KIND_RETENTION_FIELDS).join(", ")})`, `${prefix}${unknown}`);
  }
  if (input.keepSucceeded !== undefined && typeof input.keepSucceeded !== "boolean") {
    throw refuse(`${prefix}keepSucceeded must be a boolean, got ${String(input.keepSucceeded)}`, `${prefix}keepSucceeded`);
  }
  const age = (value: number | undefined, field: string): number | null => {
    if (value === undefined) return null;
    if (typeof value !== "number" || !Number.isFinite(value) || value < 0 || value > MAX_RETENTION_AGE_MS) {
      throw refuse(`${prefix}${field} must be a number of ms from 0 to ${MAX_RETENTION_AGE_MS}, got ${String(value)}`, `${prefix}${field}`);
    }
    return value;
  };
  const resolved = {
    finishedMs: age(input.finishedMs, "finishedMs"),
    deadLetterMs: age(input.deadLetterMs, "deadLetterMs"),
    keepSucceeded: input.keepSucceeded ?? DEFAULT_KEEP_SUCCEEDED,
  };
  return resolved.finishedMs === null && resolved.deadLetterMs === null && resolved.keepSucceeded === DEFAULT_KEEP_SUCCEEDED ? null : Object.freeze(resolved);
}

/** Builds the error for a refused field; the caller picks the type (ValidationError for calls, ConfigError for options). */
export type RefuseField = (message: string, field: string) => Error;

/**
 * Merge retention settings with the defaults and check them, naming the
 * refused field as `${prefix}${field}` (e.g. `worker.retention.batchSize`).
 */
export function resolveRetentionPolicy(
  input: { finishedMs?: number; deadLetterMs?: number; eventsMs?: number; batchSize?: number },
  prefix: string,
  refuse: RefuseField,
): RetentionPolicy {
  const age = (value: number | undefined, fallback: number, field: string): number => {
    const ms = value ?? fallback;
    if (typeof ms !== "number" || !Number.isFinite(ms) || ms < 0 || ms > MAX_RETENTION_AGE_MS) {
      throw refuse(`${prefix}${field} must be a number of ms from 0 to ${MAX_RETENTION_AGE_MS}, got ${String(value)}`, `${prefix}${field}`);
    }
    return ms;
  };
  const batchSize = input.batchSize ?? DEFAULT_RETENTION_BATCH_SIZE;
  if (typeof batchSize !== "number" || !Number.isInteger(batchSize) || batchSize < 1 || batchSize > MAX_RETENTION_BATCH_SIZE) {
    throw refuse(
      `${prefix}batchSize must be an integer from 1 to ${MAX_RETENTION_BATCH_SIZE}, got ${String(input.batchSize)}`,
      `${prefix}batchSize`,
    );
  }
  return Object.freeze({
    finishedMs: age(input.finishedMs, DEFAULT_RETENTION_FINISHED_MS, "finishedMs"),
    deadLetterMs: age(input.deadLetterMs, DEFAULT_RETENTION_DEAD_LETTER_MS, "deadLetterMs"),
    eventsMs: age(input.eventsMs, DEFAULT_EVENT_RETENTION_MS, "eventsMs"),
    batchSize,
  });
}
