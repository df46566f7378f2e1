import { z } from "zod";
import { REQUEUE_ACTIONS } from "../core/requeues.js";
import { EXECUTION_OUTCOMES, JOB_STATUSES } from "../core/states.js";
import { DEAD_REASONS } from "../core/transitions.js";

/**
 * The zod schemas of the JSON shapes in `serialize.ts` (jobs, executions,
 * dead letters, workers), and the JSON types inferred from them. A module
 * of its own so that the mappings, which the CLI's `--json` uses, load
 * without zod (an optional peer of the core, which the HTTP package brings).
 */

const isoTime = z.iso.datetime({ offset: true });

/** An ISO 8601 time that is null only for a stored time a JavaScript Date cannot hold (see `serialize.ts`). */
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

/** One time a job was run again with fresh attempts, as JSON. */
export const requeueShape = z.object({
  at: storedTime,
  action: z
    .enum(REQUEUE_ACTIONS)
    .describe("requeue: its dead letter was requeued; bulk_retry: a bulk retry requeued it; resume: resumed, replaying every step; rerun: rerun from fromStep"),
  fromStep: z.string().optional().describe("rerun: the step it ran again from"),
  bulkActionId: z.uuid().optional().describe("bulk_retry: the bulk action"),
});

/** A job with its attempts and its requeues, each oldest first: `GET /v1/jobs/{id}` and `jobs show --json`. */
export const jobDetailShape = jobShape.extend({
  executions: z.array(executionShape).describe("one per attempt, oldest first"),
  requeues: z
    .array(requeueShape)
    .describe("each requeue from the dead-letter queue, bulk retry, resume and rerun from a step, oldest first: the attempts after one start again from 1"),
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
    .enum(DEAD_REASONS)
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
/** One requeue of a job, as JSON. */
export type RequeueJson = z.output<typeof requeueShape>;
/** A job with its attempts and requeues, as JSON. */
export type JobDetailJson = z.output<typeof jobDetailShape>;
/** A dead letter with its history, as JSON. */
export type DeadLetterJson = z.output<typeof deadLetterShape>;
/** A live worker, as JSON. */
export type WorkerJson = z.output<typeof workerShape>;
