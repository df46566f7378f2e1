import type { ClaimedJob, DeadLetter, Job, JobExecution, JobRequeue, StoredError, WorkerInfo } from "../core/model.js";
import type { JobInsertRow } from "./job-insert-row.js";

// Row shapes as pg returns them (jsonb parsed, timestamptz as Date, int8 as number).
/* eslint-disable @typescript-eslint/no-explicit-any */
type Row = Record<string, any>;

export function rowToJob(row: Row): Job {
  // Only a running job is held by a worker. A succeeded job's row keeps its
  // last attempt's execution id and worker as that attempt's record
  // (sql/attempt-fragments.ts SUCCEEDED_WRITES), read as an attempt, not a hold.
  const held = row.status === "running";
  return {
    id: row.id,
    tenant: row.tenant,
    kind: row.kind,
    queue: row.queue,
    payload: row.payload,
    status: row.status,
    priority: row.priority,
    attempts: row.attempts,
    maxAttempts: row.max_attempts,
    runAt: row.run_at,
    lastError: (row.last_error as StoredError | null) ?? null,
    cancelRequested: row.cancel_requested,
    idempotencyKey: row.idempotency_key,
    uniqueKey: row.unique_key ?? null,
    limitKey: row.limit_key ?? null,
    result: row.result ?? null,
    lockedBy: held ? row.locked_by : null,
    currentExecutionId: held ? row.current_execution_id : null,
    leaseExpiresAt: row.lease_expires_at,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    startedAt: row.started_at,
    finishedAt: row.finished_at,
    progress: row.progress ?? null,
    progressUpdatedAt: row.progress_updated_at ?? null,
  };
}

/** A claim's row (CLAIMED_COLUMNS in sql/claim-fragments.ts). */
export function rowToClaimedJob(row: Row): ClaimedJob {
  return {
    id: row.id,
    tenant: row.tenant,
    kind: row.kind,
    queue: row.queue,
    payload: row.payload,
    attempts: row.attempts,
    maxAttempts: row.max_attempts,
    executionId: row.current_execution_id,
    idempotencyKey: row.idempotency_key,
    waitedMs: Number(row.waited_ms),
  };
}

/**
 * The job an insert just wrote, from what was inserted and the columns the
 * database decided (INSERTED_COLUMNS in sql/jobs.ts); the insert returns
 * the id it was given.
 */
export function rowToInsertedJob(input: JobInsertRow, row: Row): Job {
  return insertedJobAt(input, Number(row.created_at_ms), Number(row.run_at_ms));
}

/**
 * The job an insert just wrote, from what was inserted and the two times the
 * database decided, in epoch milliseconds. Everything else is a column
 * default of a fresh row (schema.sql), kept in step with getJob by a test
 * that compares the two.
 */
export function insertedJobAt(input: JobInsertRow, createdAtMs: number, runAtMs: number): Job {
  return {
    id: input.id,
    tenant: input.tenant,
    kind: input.kind,
    queue: input.queue,
    payload: JSON.parse(input.payload),
    status: "queued",
    priority: input.priority,
    attempts: 0,
    maxAttempts: input.maxAttempts,
    runAt: new Date(runAtMs),
    lastError: null,
    cancelRequested: false,
    idempotencyKey: input.idempotencyKey,
    uniqueKey: null,
    limitKey: input.limitKey ?? null,
    result: null,
    lockedBy: null,
    currentExecutionId: null,
    leaseExpiresAt: null,
    createdAt: new Date(createdAtMs),
    updatedAt: new Date(createdAtMs),
    startedAt: null,
    finishedAt: null,
    progress: null,
    progressUpdatedAt: null,
  };
}

export function rowToExecution(row: Row): JobExecution {
  return {
    id: row.id,
    jobId: row.job_id,
    attempt: row.attempt,
    workerId: row.worker_id,
    startedAt: row.started_at,
    finishedAt: row.finished_at,
    outcome: row.outcome,
    error: row.error ?? null,
    batch: row.batch_id ? { id: row.batch_id, size: row.batch_size } : null,
  };
}

export function rowToRequeue(row: Row): JobRequeue {
  return { at: row.at, action: row.action, fromStep: row.from_step, bulkActionId: row.bulk_action_id };
}

export function rowToDeadLetter(row: Row): DeadLetter {
  return {
    id: row.id,
    jobId: row.job_id,
    tenant: row.tenant,
    queue: row.queue,
    kind: row.kind,
    payload: row.payload,
    attempts: row.attempts,
    maxAttempts: row.max_attempts,
    reason: row.reason,
    lastError: row.last_error ?? null,
    history: row.history,
    deadAt: row.dead_at,
  };
}

export function rowToWorker(row: Row): WorkerInfo {
  return {
    id: row.id,
    hostname: row.hostname,
    pid: row.pid,
    queues: row.queues,
    kinds: row.kinds,
    concurrency: row.concurrency,
    startedAt: row.started_at,
    lastSeenAt: row.last_seen_at,
    runningJobIds: row.running_job_ids,
  };
}
