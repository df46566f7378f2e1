/**
 * Conveyor's error types. Every error the library raises on purpose is a
 * `ConveyorError` with a stable `code`, so callers (and the HTTP layer) can
 * branch on the code instead of parsing messages.
 */

import { MAX_DELAY_MS } from "./defaults.js";
import type { JobRequestField } from "./idempotency.js";

/** Stable machine-readable error codes. */
export type ConveyorErrorCode =
  | "VALIDATION"
  | "NOT_FOUND"
  | "CONFLICT"
  | "CONFIG"
  | "DATABASE"
  | "DATABASE_READ_ONLY"
  | "SCHEMA_TOO_NEW"
  | "SCHEMA_TOO_OLD"
  | "SCHEMA_MISMATCH"
  | "SEARCH_TIMEOUT"
  | "WAIT_TIMEOUT"
  | "WAIT_ABORTED"
  | "EMBEDDED_POSTGRES";

/** Base class of every error Conveyor raises on purpose. */
export class ConveyorError extends Error {
  /** Stable machine-readable code: branch on it, not on the message. */
  readonly code: ConveyorErrorCode;

  constructor(code: ConveyorErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
  }
}

/** One problem found while validating input: where, and which rule it broke. */
export interface ValidationIssue {
  /** Dotted path to the offending value, e.g. `payload.items.0.sku`; empty for the root. */
  path: string;
  /** The rule it broke, e.g. `Invalid email address`. */
  message: string;
}

/** Input was refused before anything was written. */
export class ValidationError extends ConveyorError {
  /** Every problem found, each naming its path. */
  readonly issues: readonly ValidationIssue[];

  constructor(message: string, issues: readonly ValidationIssue[] = [], options?: { cause?: unknown }) {
    super("VALIDATION", message, options);
    this.issues = issues;
  }
}

/** The job, dead letter or key does not exist (or belongs to another tenant). */
export class NotFoundError extends ConveyorError {
  constructor(message: string) {
    super("NOT_FOUND", message);
  }
}

/** The request contradicts existing state (an idempotency key reused differently, a terminal job). */
export class ConflictError extends ConveyorError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("CONFLICT", message, options);
  }
}

/**
 * An enqueue with a unique key was refused because another job holds the
 * key: `onConflict: "drop"`, or "replace" meeting a holder of another kind.
 * Nothing was inserted or changed. `holderId` names the job holding the key.
 */
export class UniqueJobConflictError extends ConflictError {
  /** The unique key that was held. */
  readonly uniqueKey: string;
  /** The job holding it. */
  readonly holderId: string;

  constructor(uniqueKey: string, holderId: string, message?: string) {
    super(message ?? `unique key ${JSON.stringify(uniqueKey)} is held by job ${holderId}; nothing was enqueued (onConflict: "drop")`);
    this.uniqueKey = uniqueKey;
    this.holderId = holderId;
  }
}

/**
 * A flow or batch reused an idempotency key with a different request (any
 * difference in its jobs, payloads, options or edges). Nothing was inserted.
 */
export class FlowIdempotencyConflictError extends ConflictError {
  /** The reused key. */
  readonly idempotencyKey: string;
  /** The flow the key already names. */
  readonly flowId: string;

  constructor(idempotencyKey: string, flowId: string) {
    super(`idempotency key ${JSON.stringify(idempotencyKey)} was already used for flow ${flowId} with a different request`);
    this.idempotencyKey = idempotencyKey;
    this.flowId = flowId;
  }
}

/**
 * An enqueue reused an idempotency key with a different request (see
 * `requestDifferences` for what "same" means). Nothing was inserted.
 * `jobId` is the job the key already names, or null when two items of one
 * `enqueueMany` call carried the key; `fields` lists what differed.
 */
export class IdempotencyConflictError extends ConflictError {
  /** The reused key. */
  readonly idempotencyKey: string;
  /** The job the key already names; null when the earlier request was another item of the same batch. */
  readonly jobId: string | null;
  /** The fields in which the requests differ. */
  readonly fields: readonly JobRequestField[];

  constructor(idempotencyKey: string, jobId: string | null, fields: readonly JobRequestField[]) {
    const used = jobId === null ? "by another item of this batch" : `for job ${jobId}`;
    super(`idempotency key ${JSON.stringify(idempotencyKey)} was already used ${used} with a different ${fields.join(", ")}`);
    this.idempotencyKey = idempotencyKey;
    this.jobId = jobId;
    this.fields = fields;
  }
}

/** Options that cannot work, named by field. */
export class ConfigError extends ConveyorError {
  constructor(message: string) {
    super("CONFIG", message);
  }
}

/** The database refused or failed an operation in a way the caller cannot fix by changing input. */
export class DatabaseError extends ConveyorError {
  constructor(message: string, options?: { cause?: unknown }, code: "DATABASE" | "DATABASE_READ_ONLY" = "DATABASE") {
    super(code, message, options);
  }
}

/**
 * The database refused a write because it is read-only: a standby (as
 * during a failover), or `default_transaction_read_only` is on. Nothing was
 * written; the same call may succeed once a writable primary answers.
 */
export class DatabaseReadOnlyError extends DatabaseError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options, "DATABASE_READ_ONLY");
  }
}

/**
 * A search or count did not finish within the client's `searchTimeoutMs`:
 * its filter matches rows that no index reaches directly (an error text
 * alone, say), so answering would mean reading most of the jobs table.
 * Nothing was changed. Narrow it by queue, kind, status or a time range.
 */
export class SearchTimeoutError extends ConveyorError {
  /** The bound it hit, in ms (`searchTimeoutMs`). */
  readonly timeoutMs: number;

  constructor(timeoutMs: number, options?: { cause?: unknown }) {
    super(
      "SEARCH_TIMEOUT",
      `the search did not finish within ${timeoutMs} ms (searchTimeoutMs): narrow it by queue, kind, status or a time range (createdAfter, createdBefore)`,
      options,
    );
    this.timeoutMs = timeoutMs;
  }
}

/** `waitFor` gave up: the job had not ended within `timeoutMs`. The job itself is untouched and may still end. */
export class WaitTimeoutError extends ConveyorError {
  /** The job waited for. */
  readonly jobId: string;
  /** How long it was waited for, in ms. */
  readonly timeoutMs: number;

  constructor(jobId: string, timeoutMs: number) {
    super("WAIT_TIMEOUT", `job ${jobId} did not end within ${timeoutMs} ms; it is left as it is and may still end`);
    this.jobId = jobId;
    this.timeoutMs = timeoutMs;
  }
}

/** `waitFor` stopped because its `signal` aborted (the abort's reason is the `cause`). The job itself is untouched. */
export class WaitAbortedError extends ConveyorError {
  /** The job waited for. */
  readonly jobId: string;

  constructor(jobId: string, options?: { cause?: unknown }) {
    super("WAIT_ABORTED", `the wait for job ${jobId} was aborted; the job is left as it is`, options);
    this.jobId = jobId;
  }
}

/** The database was migrated by a newer Conveyor than this one. */
export class SchemaTooNewError extends ConveyorError {
  constructor(message: string) {
    super("SCHEMA_TOO_NEW", message);
  }
}

/**
 * The database's schema was migrated by a build older than this one's
 * baseline migration, which this build cannot upgrade: migrate it first with
 * the build that wrote it, to its newest migration.
 */
export class SchemaTooOldError extends ConveyorError {
  constructor(message: string) {
    super("SCHEMA_TOO_OLD", message);
  }
}

/**
 * A migration the database applied is not the one this build ships under
 * its number: another name, or another SHA-256 of its file. Landed
 * migrations never change, so this is a database migrated by a build that
 * shipped a different file (an unreleased one, or an edited copy); `migrate`
 * writes nothing to it.
 */
export class SchemaMismatchError extends ConveyorError {
  constructor(message: string) {
    super("SCHEMA_MISMATCH", message);
  }
}

/**
 * The embedded PostgreSQL server could not be started or found. The message
 * is one line that names the cause (port in use, permission denied, disk full,
 * binaries missing…), so a CLI can print it as is.
 */
export class EmbeddedPostgresError extends ConveyorError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("EMBEDDED_POSTGRES", message, options);
  }
}

/**
 * Throw from a handler to fail the job without retrying: it goes straight to
 * the dead-letter queue. Use it for input that will never succeed (a deleted
 * account, a malformed address).
 */
export class PermanentError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "PermanentError";
  }
}

/**
 * Throw (or return) from a handler to run the job again after `delayMs`
 * (0 to `MAX_DELAY_MS`, 10 years) without counting the attempt as a failure: for "not yet" conditions such as
 * a rate limit or an upstream that asked to come back later.
 */
export class RetryAfter extends Error {
  /** How long from now the job runs again, in ms. */
  readonly delayMs: number;

  constructor(delayMs: number, message = `retry after ${delayMs} ms`) {
    super(message);
    this.name = "RetryAfter";
    // Bounded like an enqueue's delay: the retry's run time must fit the jobs table (jobs_run_at_bounded).
    if (!Number.isFinite(delayMs) || delayMs < 0 || delayMs > MAX_DELAY_MS) {
      throw new ValidationError(`RetryAfter delayMs must be a number from 0 to ${MAX_DELAY_MS} (10 years), got ${String(delayMs)}`, [
        { path: "delayMs", message: `must be a number from 0 to ${MAX_DELAY_MS}` },
      ]);
    }
    this.delayMs = delayMs;
  }
}

/** Helper for handlers: `return retryAfter(30_000)`. */
export function retryAfter(delayMs: number, message?: string): RetryAfter {
  return new RetryAfter(delayMs, message);
}

/**
 * A durable handler used `step`, `sleep` or `waitForEvent` in a way no run
 * of the job can get past: a name used twice in one run, or by a step in
 * one place and a sleep in another, more than `MAX_STEPS_PER_JOB` records,
 * a step result larger than `MAX_STEP_RESULT_BYTES`. A `PermanentError`:
 * the job goes to the dead-letter queue rather than retrying into the same
 * error.
 */
export class StepError extends PermanentError {
  constructor(message: string) {
    super(message);
    this.name = "StepError";
  }
}

/**
 * Thrown out of `sleep` and `waitForEvent` when they suspend the job: the
 * attempt has ended (`suspended`) and the job runs again from the top when
 * it wakes. Let it propagate; a handler that catches it cannot go on, since
 * every later `step`, `sleep` or `waitForEvent` of the attempt throws it
 * again and nothing it returns is recorded.
 */
export class JobSuspendedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "JobSuspendedError";
  }
}
