import type { TraceContext } from "./trace-context.js";
import type { RequeueAction } from "./requeues.js";
import type { ExecutionOutcome, JobStatus } from "./states.js";
import type { DeadReason } from "./transitions.js";

/** An error as stored on a job or an execution. */
export interface StoredError {
  /** The error's class name, e.g. `TypeError`. */
  name: string;
  /** Its message. */
  message: string;
  /** Its stack trace, when it had one. */
  stack?: string;
}

/** A job as stored. `P` is the payload type. */
export interface Job<P = unknown> {
  /** A UUIDv7 made from the database clock: ids sort by creation time. */
  id: string;
  /** The tenant the job belongs to. */
  tenant: string;
  /** The job kind, which names its handler. */
  kind: string;
  /** The queue it waits in. */
  queue: string;
  /** The payload, as the kind's schema parsed it. */
  payload: P;
  /** Where the job is in its life (see `JOB_STATUSES`). */
  status: JobStatus;
  /** Lower runs first. */
  priority: number;
  /** Attempts counted so far (claims, less the ones given back by shutdown or retry-after). */
  attempts: number;
  /** Attempts allowed before it is dead-lettered. */
  maxAttempts: number;
  /** Earliest time the job may run (database clock). */
  runAt: Date;
  /** The error of the latest failed attempt; null when none failed. */
  lastError: StoredError | null;
  /** Set when cancellation was asked for a running job. */
  cancelRequested: boolean;
  /** The idempotency key it was enqueued with; null when none. */
  idempotencyKey: string | null;
  /** The unique key the job holds; null when it has none or released it by leaving its unique states. */
  uniqueKey: string | null;
  /** The key its queue's limits per key count it under; null when none. */
  limitKey: string | null;
  /** The handler's return value, when it succeeded and returned JSON. */
  result: unknown;
  /** The worker holding the job while it runs. */
  lockedBy: string | null;
  /** The attempt running now; null when none is. */
  currentExecutionId: string | null;
  /** When the running attempt's lease ends unless renewed; null when not running. */
  leaseExpiresAt: Date | null;
  /** When it was enqueued (database clock). */
  createdAt: Date;
  /** When the row last changed. */
  updatedAt: Date;
  /** When the latest attempt started. */
  startedAt: Date | null;
  /** When the job reached a terminal state. */
  finishedAt: Date | null;
  /** The latest value a handler reported with `ctx.progress()` (kept after the job ends); null before any. */
  progress: unknown;
  /** When `progress` was stored (database clock). */
  progressUpdatedAt: Date | null;
}

/**
 * A job as a claim hands it to the worker: what running it takes, not the
 * whole row (the rest is on the row, for `getJob`). Reading back every
 * column cost a claim of 200 a quarter of its time, mostly turning seven
 * timestamps into text and back.
 */
export interface ClaimedJob<P = unknown> {
  id: string;
  tenant: string;
  kind: string;
  queue: string;
  payload: P;
  /** This attempt's number (attempts counted so far, this one included). */
  attempts: number;
  maxAttempts: number;
  /** The execution this claim started: every write about the attempt is fenced by it. */
  executionId: string;
  idempotencyKey: string | null;
  /** Milliseconds from the job becoming ready (run_at) to this claim, by the database clock. */
  waitedMs: number;
  /**
   * The trace context stored at enqueue, read only while a
   * tracer provider is registered; absent otherwise.
   */
  traceContext?: TraceContext | null;
  /** The trace contexts of the job's dependencies (workflows), which its attempt's span links; read as `traceContext` is. */
  dependencyTraceContexts?: readonly TraceContext[];
}

/** One attempt of a job. */
export interface JobExecution {
  /** The execution id (a UUIDv7), which fences every write about the attempt. */
  id: string;
  /** The job it is an attempt of. */
  jobId: string;
  /** Its number, 1 for the first. */
  attempt: number;
  /** The worker that ran it. */
  workerId: string;
  /** When it started. */
  startedAt: Date;
  /** When it ended; null while running. */
  finishedAt: Date | null;
  /** How it ended (see `EXECUTION_OUTCOMES`). */
  outcome: ExecutionOutcome;
  /** The error it failed with; null otherwise. */
  error: StoredError | null;
  /** The batch it ran in, for a batch handler's job: the batch's id and how many jobs it held; null otherwise. */
  batch: { id: string; size: number } | null;
}

/**
 * One time a job was made to run again with fresh attempts: a requeue from
 * the dead-letter queue, a bulk retry, a resume or a rerun from a step. The
 * attempts after it start again from 1.
 */
export interface JobRequeue {
  /** When it happened (database clock). */
  at: Date;
  /** What did it (see `REQUEUE_ACTIONS`). */
  action: RequeueAction;
  /** For a `rerun`, the step it started from; null otherwise. */
  fromStep: string | null;
  /** For a `bulk_retry`, the bulk action's id; null otherwise. */
  bulkActionId: string | null;
}

/** A job with its attempts, oldest first, and the requeues between them. */
export interface JobWithExecutions<P = unknown> extends Job<P> {
  /** Every attempt, oldest first. */
  executions: JobExecution[];
  /** Every requeue, resume, rerun and bulk retry that ran the job again with fresh attempts, oldest first. */
  requeues: JobRequeue[];
}

/** An entry in the dead-letter queue: a dead job as it died (nothing changes a dead job), with why, when, and its attempts. */
export interface DeadLetter {
  /** The dead letter's id. */
  id: string;
  /** The job that died (requeueing it keeps this id). */
  jobId: string;
  /** The job's tenant. */
  tenant: string;
  /** The job's queue. */
  queue: string;
  /** The job's kind. */
  kind: string;
  /** The job's payload. */
  payload: unknown;
  /** Attempts it made. */
  attempts: number;
  /** Attempts it was allowed. */
  maxAttempts: number;
  /** Why it died: attempts ran out, a handler threw `PermanentError`, or a dependency ended other than succeeded. */
  reason: DeadReason;
  /** The error of its last attempt. */
  lastError: StoredError | null;
  /** Every attempt up to the death, oldest first. */
  history: Array<{
    /** The attempt's execution id. */
    executionId: string;
    /** Its number, 1 for the first. */
    attempt: number;
    /** The worker that ran it. */
    workerId: string;
    /** When it started (ISO 8601). */
    startedAt: string;
    /** When it ended (ISO 8601); null if it never recorded an end. */
    finishedAt: string | null;
    /** How it ended. */
    outcome: ExecutionOutcome;
    /** The error it failed with; null otherwise. */
    error: StoredError | null;
  }>;
  /** When it died. */
  deadAt: Date;
}

/** A worker process as registered in the database. */
export interface WorkerInfo {
  /** The worker's id. */
  id: string;
  /** The host it runs on. */
  hostname: string;
  /** Its process id. */
  pid: number;
  /** Queues it serves; null means all. */
  queues: string[] | null;
  /** Job kinds it runs. */
  kinds: string[];
  /** Jobs it runs at once at most. */
  concurrency: number;
  /** When it started. */
  startedAt: Date;
  /** When it last reported in. */
  lastSeenAt: Date;
  /** Jobs it is running now. */
  runningJobIds: string[];
}

/** A page of results and the cursor for the next one (null at the end). */
export interface Page<T> {
  /** This page's items. */
  items: T[];
  /** Pass as `cursor` for the next page; null on the last one. */
  nextCursor: string | null;
}
