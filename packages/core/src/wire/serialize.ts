import { z } from "zod";
import type { DeadLetter, Job, JobExecution, StoredError, WorkerInfo } from "../core/model.js";
import { EXECUTION_OUTCOMES, JOB_STATUSES } from "../core/states.js";

/**
 * The JSON shapes of jobs, executions, dead letters and workers, each
 * defined once: a zod schema (the HTTP API's response schema, which
 * serializes its responses, and the OpenAPI document's) and the mapping from
 * the library's type, which the CLI's `--json` prints too. camelCase, dates
 * as ISO 8601 strings, and only the fields the schemas declare (lease and
 * fencing internals stay out).
 * Stored errors lose their stack: stacks describe the worker's code, not
 * the job, and stay in the database and the worker's logs.
 *
 * Serializing never throws on a stored row: a time outside what a
 * JavaScript Date holds (PostgreSQL keeps years up to 294276, and
 * 'infinity') comes out as null, so one such row cannot break a listing.
 */

const isoTime = z.iso.datetime({ offset: true });

/** An ISO 8601 time that is null only for a stored time a JavaScript Date cannot hold (see the note above). */
export const storedTime = isoTime.nullable().describe("ISO 8601; null only for a stored time outside what a JavaScript Date holds");

/** A time that may be unset: ISO 8601, or null. */
export const optionalTime = isoTime.nullable();

/** A stored error without its stack. */
export const errorShape = z.object({ name: z.string(), message: z.string() });

/** A job as JSON. */
export const jobShape = z.object({
  id: z.uuid(),
  tenant: z.string(),
  kind: z.string(),
  queue: z.string(),
  payload: z.unknown(),
  status: z.enum(JOB_STATUSES),
  priority: z.number().int(),
  attempts: z.number().int(),
  maxAttempts: z.number().int(),
  runAt: storedTime,
  lastError: errorShape.nullable(),
  cancelRequested: z.boolean(),
  uniqueKey: z.string().nullable().describe("the unique key the job holds; null when none or released"),
  limitKey: z
    .string()
    .nullable()
    .describe("the key its queue's limits per key count it under (GET /v1/queues/{queue}/keys/{key} says why it waits); null when none"),
  createdAt: storedTime,
  updatedAt: storedTime,
  startedAt: optionalTime,
  finishedAt: optionalTime,
  result: z.unknown().describe("the handler's return value once the job succeeded; null when it returned nothing"),
  progress: z.unknown().describe("the latest value the handler reported with ctx.progress(); null before any"),
  progressUpdatedAt: optionalTime.describe("when progress was stored"),
});

/** One attempt of a job as JSON. */
export const executionShape = z.object({
  id: z.uuid(),
  attempt: z.number().int(),
  workerId: z.string(),
  startedAt: storedTime,
  finishedAt: optionalTime,
  outcome: z.enum(EXECUTION_OUTCOMES),
  error: errorShape.nullable(),
  batch: z
    .object({ id: z.uuid(), size: z.number().int().describe("jobs in the batch") })
    .nullable()
    .describe("the batch a batch handler ran this attempt in; null otherwise (and in a dead letter's history)"),
});

/** A dead letter as JSON, with the job's whole execution history. */
export const deadLetterShape = z.object({
  id: z.uuid(),
  jobId: z.uuid(),
  tenant: z.string(),
  queue: z.string(),
  kind: z.string(),
  payload: z.unknown(),
  attempts: z.number().int(),
  maxAttempts: z.number().int(),
  reason: z
    .enum(["attempts_exhausted", "permanent_error", "dependency_failed"])
    .describe("attempts ran out, a handler threw PermanentError, or a dependency ended other than succeeded"),
  lastError: errorShape.nullable(),
  history: z.array(executionShape),
  deadAt: storedTime,
});

/** A live worker as JSON. */
export const workerShape = z.object({
  id: z.string(),
  hostname: z.string(),
  pid: z.number().int(),
  queues: z.array(z.string()).nullable().describe("null: all queues"),
  kinds: z.array(z.string()),
  concurrency: z.number().int(),
  startedAt: storedTime,
  lastSeenAt: storedTime,
  runningJobIds: z.array(z.uuid()).describe("a tenant key sees only its own tenant's jobs here"),
});

/** A job as the API sends it and `--json` prints it. */
export type JobJson = z.output<typeof jobShape>;
/** A stored error without its stack. */
export type ErrorJson = z.output<typeof errorShape>;
/** One attempt of a job, as JSON. */
export type ExecutionJson = z.output<typeof executionShape>;
/** A dead letter with its history, as JSON. */
export type DeadLetterJson = z.output<typeof deadLetterShape>;
/** A live worker, as JSON. */
export type WorkerJson = z.output<typeof workerShape>;

/** A job as JSON. */
export function jobJson(job: Job): JobJson {
  return {
    id: job.id,
    tenant: job.tenant,
    kind: job.kind,
    queue: job.queue,
    payload: job.payload,
    status: job.status,
    priority: job.priority,
    attempts: job.attempts,
    maxAttempts: job.maxAttempts,
    runAt: iso(job.runAt),
    lastError: errorJson(job.lastError),
    cancelRequested: job.cancelRequested,
    uniqueKey: job.uniqueKey,
    limitKey: job.limitKey,
    createdAt: iso(job.createdAt),
    updatedAt: iso(job.updatedAt),
    startedAt: isoOrNull(job.startedAt),
    finishedAt: isoOrNull(job.finishedAt),
    result: job.result ?? null,
    progress: job.progress ?? null,
    progressUpdatedAt: isoOrNull(job.progressUpdatedAt ?? null),
  };
}

/** One attempt as JSON. */
export function executionJson(execution: JobExecution): ExecutionJson {
  return {
    id: execution.id,
    attempt: execution.attempt,
    workerId: execution.workerId,
    startedAt: iso(execution.startedAt),
    finishedAt: isoOrNull(execution.finishedAt),
    outcome: execution.outcome,
    error: errorJson(execution.error),
    batch: execution.batch,
  };
}

/** A dead letter as JSON; the times of its history, stored as jsonb text, normalised. */
export function deadLetterJson(entry: DeadLetter): DeadLetterJson {
  return {
    id: entry.id,
    jobId: entry.jobId,
    tenant: entry.tenant,
    queue: entry.queue,
    kind: entry.kind,
    payload: entry.payload,
    attempts: entry.attempts,
    maxAttempts: entry.maxAttempts,
    reason: entry.reason,
    lastError: errorJson(entry.lastError),
    // The history is stored as jsonb, so its times arrive as Postgres' text; normalise them.
    history: entry.history.map(
      (attempt): ExecutionJson => ({
        id: attempt.executionId,
        attempt: attempt.attempt,
        workerId: attempt.workerId,
        startedAt: iso(attempt.startedAt),
        finishedAt: isoOrNull(attempt.finishedAt),
        outcome: attempt.outcome,
        error: errorJson(attempt.error),
        batch: null,
      }),
    ),
    deadAt: iso(entry.deadAt),
  };
}

/** A live worker as JSON. */
export function workerJson(worker: WorkerInfo): WorkerJson {
  return {
    id: worker.id,
    hostname: worker.hostname,
    pid: worker.pid,
    queues: worker.queues,
    kinds: worker.kinds,
    concurrency: worker.concurrency,
    startedAt: iso(worker.startedAt),
    lastSeenAt: iso(worker.lastSeenAt),
    runningJobIds: worker.runningJobIds,
  };
}

/** A stored error as JSON, without its stack; null for none. */
export function errorJson(error: StoredError | null): ErrorJson | null {
  if (!error) return null;
  return { name: String(error.name), message: String(error.message) };
}

/** ISO 8601 text of a stored time; null when JavaScript cannot represent it (never throws). */
function iso(value: Date | string | number): string | null {
  const date = value instanceof Date ? value : new Date(value);
  return Number.isNaN(date.getTime()) ? null : date.toISOString();
}

/** ISO 8601 text of a stored time, null for none or for one JavaScript cannot represent; never throws. */
export function isoOrNull(value: Date | string | number | null | undefined): string | null {
  return value === null || value === undefined ? null : iso(value);
}
