import type { ExecutionOutcome, JobStatus } from "./states.js";

/** An error as stored on a job or an execution. */
export interface StoredError {
  name: string;
  message: string;
  stack?: string;
}

/** A job as stored. `P` is the payload type. */
export interface Job<P = unknown> {
  id: string;
  tenant: string;
  kind: string;
  queue: string;
  payload: P;
  status: JobStatus;
  /** Lower runs first. */
  priority: number;
  /** Attempts counted so far (claims, less the ones given back by shutdown or retry-after). */
  attempts: number;
  maxAttempts: number;
  /** Earliest time the job may run (database clock). */
  runAt: Date;
  lastError: StoredError | null;
  /** Set when cancellation was asked for a running job. */
  cancelRequested: boolean;
  idempotencyKey: string | null;
  /** The unique key the job holds; null when it has none or released it by leaving its unique states. */
  uniqueKey: string | null;
  /** The handler's return value, when it succeeded and returned JSON. */
  result: unknown;
  /** The worker holding the job while it runs. */
  lockedBy: string | null;
  currentExecutionId: string | null;
  leaseExpiresAt: Date | null;
  createdAt: Date;
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
}

/** One attempt of a job. */
export interface JobExecution {
  id: string;
  jobId: string;
  attempt: number;
  workerId: string;
  startedAt: Date;
  finishedAt: Date | null;
  outcome: ExecutionOutcome;
  error: StoredError | null;
}

/** A job with its attempts, oldest first. */
export interface JobWithExecutions<P = unknown> extends Job<P> {
  executions: JobExecution[];
}

/** An entry in the dead-letter queue: a snapshot taken when the job died. */
export interface DeadLetter {
  id: string;
  jobId: string;
  tenant: string;
  queue: string;
  kind: string;
  payload: unknown;
  attempts: number;
  maxAttempts: number;
  reason: "attempts_exhausted" | "permanent_error";
  lastError: StoredError | null;
  /** Every attempt up to the death, oldest first. */
  history: Array<{
    executionId: string;
    attempt: number;
    workerId: string;
    startedAt: string;
    finishedAt: string | null;
    outcome: ExecutionOutcome;
    error: StoredError | null;
  }>;
  deadAt: Date;
}

/** A worker process as registered in the database. */
export interface WorkerInfo {
  id: string;
  hostname: string;
  pid: number;
  /** Queues it serves; null means all. */
  queues: string[] | null;
  kinds: string[];
  concurrency: number;
  startedAt: Date;
  lastSeenAt: Date;
  runningJobIds: string[];
}

/** A page of results and the cursor for the next one (null at the end). */
export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}
