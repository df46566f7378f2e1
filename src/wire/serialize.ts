import type { DeadLetter, Job, JobExecution, StoredError, WorkerInfo } from "../core/model.js";

/**
 * The JSON shapes of the API: camelCase, dates as ISO 8601 strings, and
 * only the fields the API documents (lease and fencing internals stay out).
 * Stored errors lose their stack: stacks describe the worker's code, not
 * the job, and stay in the database and the worker's logs.
 *
 * Serializing never throws on a stored row: a time outside what a
 * JavaScript Date holds (PostgreSQL keeps years up to 294276, and
 * 'infinity') comes out as null, so one such row cannot break a listing.
 */

export interface JobJson {
  id: string;
  tenant: string;
  kind: string;
  queue: string;
  payload: unknown;
  status: string;
  priority: number;
  attempts: number;
  maxAttempts: number;
  /** Null only for a stored time a JavaScript Date cannot hold (see the note above); likewise createdAt and updatedAt. */
  runAt: string | null;
  lastError: ErrorJson | null;
  cancelRequested: boolean;
  /** Null when the job has no unique key or released it. */
  uniqueKey: string | null;
  /** Null when the job has no limit key. */
  limitKey: string | null;
  createdAt: string | null;
  updatedAt: string | null;
  startedAt: string | null;
  finishedAt: string | null;
  /** The handler's return value once it succeeded (null when it returned nothing). */
  result: unknown;
  /** The latest value the handler reported with ctx.progress(); null before any. */
  progress: unknown;
  progressUpdatedAt: string | null;
}

export interface ErrorJson {
  name: string;
  message: string;
}

export interface ExecutionJson {
  id: string;
  attempt: number;
  workerId: string;
  startedAt: string | null;
  finishedAt: string | null;
  outcome: string;
  error: ErrorJson | null;
}

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

export function executionJson(execution: JobExecution): ExecutionJson {
  return {
    id: execution.id,
    attempt: execution.attempt,
    workerId: execution.workerId,
    startedAt: iso(execution.startedAt),
    finishedAt: isoOrNull(execution.finishedAt),
    outcome: execution.outcome,
    error: errorJson(execution.error),
  };
}

export function deadLetterJson(entry: DeadLetter) {
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
      }),
    ),
    deadAt: iso(entry.deadAt),
  };
}

export function workerJson(worker: WorkerInfo) {
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

function errorJson(error: StoredError | null): ErrorJson | null {
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
