import type { DeadLetter, Job, JobExecution, JobRequeue, JobWithExecutions, StoredError, WorkerInfo } from "../core/model.js";
import type { DeadLetterJson, ErrorJson, ExecutionJson, JobDetailJson, JobJson, RequeueJson, WorkerJson } from "./job-shapes.js";

/**
 * The JSON shapes of jobs, executions, dead letters and workers, each
 * defined once: a zod schema in `job-shapes.ts` (the HTTP API's response
 * schema, which serializes its responses, and the OpenAPI document's) and
 * the mapping from the library's type here, which the CLI's `--json` prints
 * too. camelCase, dates as ISO 8601 strings, and only the fields the
 * schemas declare (lease and fencing internals stay out).
 * Stored errors lose their stack: stacks describe the worker's code, not
 * the job, and stay in the database and the worker's logs.
 *
 * Serializing never throws on a stored row: a time outside what a
 * JavaScript Date holds (PostgreSQL keeps years up to 294276, and
 * 'infinity') comes out as null, so one such row cannot break a listing.
 */

export type { DeadLetterJson, ErrorJson, ExecutionJson, JobDetailJson, JobJson, RequeueJson, WorkerJson } from "./job-shapes.js";

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

/** One requeue as JSON: `fromStep` only for a rerun, `bulkActionId` only for a bulk retry. */
export function requeueJson(requeue: JobRequeue): RequeueJson {
  return {
    at: iso(requeue.at),
    action: requeue.action,
    ...(requeue.fromStep === null ? {} : { fromStep: requeue.fromStep }),
    ...(requeue.bulkActionId === null ? {} : { bulkActionId: requeue.bulkActionId }),
  };
}

/** A job with its attempts and requeues as JSON (`GET /v1/jobs/{id}`, `jobs show --json`). */
export function jobDetailJson(job: JobWithExecutions): JobDetailJson {
  return { ...jobJson(job), executions: job.executions.map(executionJson), requeues: job.requeues.map(requeueJson) };
}

/** A dead letter as JSON; the times of its history, read as jsonb text, normalised. */
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
    // The history is read as jsonb, so its times arrive as Postgres' text; normalise them.
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
