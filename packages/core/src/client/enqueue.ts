import { DEFAULT_TENANT } from "../core/defaults.js";
import { ValidationError } from "../core/errors.js";
import { uuidv7 } from "../core/ids.js";
import { encodeJson } from "../core/json.js";
import type { Job } from "../core/model.js";
import { checkTraceContext, encodeTraceContext, type TraceContext } from "../core/trace-context.js";
import type { UniqueOptions } from "../core/unique.js";
import type { Queryable } from "../store/db.js";
import type { JobInsertRow, UniqueInsert } from "../store/job-insert-row.js";
import type { JobStore } from "../store/job-store.js";
import type { AnyJobDefinition } from "../core/define-job.js";
import type { EnqueuedJob } from "./enqueued-job.js";
import type { DependencyPolicy, JobDependency } from "../core/flows.js";
import { checkSameRequest, requestOf, RetryableEnqueue } from "./enqueue-race.js";
import { insertUniqueJob } from "./enqueue-unique.js";
import { resolveUniqueOption } from "./unique-options.js";
import {
  checkDelayMs,
  checkKnownFields,
  checkIdempotencyKey,
  checkLimitKey,
  checkMaxAttempts,
  checkName,
  checkPriority,
  checkRunAt,
  checkTenant,
  validatePayload,
  type KnownFields,
} from "../core/validate.js";

/** Options for one enqueue. Unset fields come from the job definition. */
export interface EnqueueOptions {
  /** Run no earlier than this time, from `MIN_RUN_AT_MS` (2000-01-01) to before `MAX_RUN_AT_MS` (year 10000). Exclusive with `delayMs`. */
  runAt?: Date;
  /** Run no earlier than this many ms from now (database clock), at most `MAX_DELAY_MS` (10 years). Exclusive with `runAt`. */
  delayMs?: number;
  /** Lower runs first; -1000..1000. Default: the definition's. */
  priority?: number;
  /** Default: the definition's queue. */
  queue?: string;
  /** Default: the definition's maxAttempts. */
  maxAttempts?: number;
  /** Same key (per tenant) with the same request (kind, payload, queue, priority, maxAttempts) returns the job it first created; a different request is refused with IdempotencyConflictError. */
  idempotencyKey?: string;
  /**
   * At most one job per `unique.key` (per tenant) among the jobs in
   * `unique.states` (default queued, retrying, running); `unique.onConflict`
   * (default "keep") says what happens when another job holds the key. An
   * idempotency key that already names a job answers before the unique key.
   */
  unique?: UniqueOptions;
  /**
   * The tenant the job belongs to.
   * @defaultValue `DEFAULT_TENANT` ("default")
   */
  tenant?: string;
  /**
   * The key this job's limits per key are counted under (a customer, a
   * host…): 1 to `MAX_LIMIT_KEY_LENGTH` (256) characters. Default: the
   * definition's `limitKey(payload)`, else none (no key limits apply).
   */
  limitKey?: string;
  /** Run inside your transaction: any client with `query(text, values)`. The job exists only if it commits. */
  tx?: Queryable;
  /**
   * Jobs (ids, of the same tenant) this one waits for: it is `waiting` until
   * every one has ended, then ready, or dead-lettered or cancelled as each
   * one's policy says when it ends other than succeeded. A job that does not
   * exist, or belongs to another tenant, is refused. Default: none. Not with
   * `unique`.
   */
  dependsOn?: readonly JobDependency[];
  /**
   * The policy of each dependency that names none.
   * @defaultValue `DEFAULT_DEPENDENCY_POLICY` ("fail")
   */
  onDependencyFailure?: DependencyPolicy;
  /**
   * The W3C trace context to enqueue in (the HTTP API passes the request's
   * `traceparent` and `tracestate`). Default: the active OpenTelemetry
   * context, when a tracer provider is registered; otherwise none is stored.
   * See docs/tracing.md.
   */
  traceContext?: TraceContext;
}

/** The options that describe the job itself: all of `EnqueueOptions` but where and after what it is written. */
export type JobRowOptions = Omit<EnqueueOptions, "tx" | "dependsOn" | "onDependencyFailure">;

/** Every field of `JobRowOptions`, for the unknown-field rule. */
export const JOB_ROW_OPTION_FIELDS: KnownFields<JobRowOptions> = {
  runAt: true,
  delayMs: true,
  priority: true,
  queue: true,
  maxAttempts: true,
  idempotencyKey: true,
  unique: true,
  tenant: true,
  limitKey: true,
  traceContext: true,
};

/** Every field of `EnqueueOptions`. */
export const ENQUEUE_OPTION_FIELDS: KnownFields<EnqueueOptions> = { ...JOB_ROW_OPTION_FIELDS, tx: true, dependsOn: true, onDependencyFailure: true };

/** Refuse an `enqueue` option it does not define (a ValidationError naming it). */
export function checkEnqueueOptions(options: EnqueueOptions): void {
  checkKnownFields(options, ENQUEUE_OPTION_FIELDS, "an enqueue option");
}

/** One enqueue request after validation: the row to insert. */
export async function prepareInsert(
  definition: AnyJobDefinition,
  payload: unknown,
  options: JobRowOptions,
  /** When the id is made, by the database's clock (DatabaseClock). */
  nowMs: number,
): Promise<JobInsertRow> {
  const { runAt, delayMs } = options;
  if (runAt !== undefined && delayMs !== undefined) {
    throw new ValidationError("give runAt or delayMs, not both", [{ path: "runAt", message: "exclusive with delayMs" }]);
  }
  if (runAt !== undefined) checkRunAt(runAt);
  if (delayMs !== undefined) checkDelayMs(delayMs);
  const priority = options.priority ?? definition.priority;
  checkPriority(priority);
  const queue = options.queue ?? definition.queue;
  checkName(queue, "queue", ValidationError);
  const maxAttempts = options.maxAttempts ?? definition.maxAttempts;
  checkMaxAttempts(maxAttempts);
  const tenant = options.tenant ?? DEFAULT_TENANT;
  checkTenant(tenant);
  if (options.idempotencyKey !== undefined) checkIdempotencyKey(options.idempotencyKey);
  if (options.traceContext !== undefined) checkTraceContext(options.traceContext);
  const unique = resolveUniqueOption(options.unique, options.priority !== undefined);
  const parsed = await validatePayload(definition.schema, payload, definition.kind);
  const limitKey = options.limitKey ?? deriveLimitKey(definition, parsed);
  if (limitKey !== undefined) checkLimitKey(limitKey);
  return {
    id: uuidv7(nowMs),
    tenant,
    queue,
    kind: definition.kind,
    payload: encodeJson(parsed),
    priority,
    maxAttempts,
    runAt: runAt ?? null,
    delayMs: delayMs ?? null,
    idempotencyKey: options.idempotencyKey ?? null,
    unique,
    traceContext: options.traceContext === undefined ? null : encodeTraceContext(options.traceContext),
    ...(limitKey === undefined ? {} : { limitKey }),
  };
}

/** The definition's limit key for a parsed payload; a function that throws refuses the job (ValidationError). */
function deriveLimitKey(definition: AnyJobDefinition, payload: unknown): string | undefined {
  if (definition.limitKey === null) return undefined;
  try {
    return definition.limitKey(payload);
  } catch (error) {
    const message = `limitKey of job "${definition.kind}" threw: ${error instanceof Error ? error.message : String(error)}`;
    throw new ValidationError(message, [{ path: "limitKey", message }]);
  }
}

/**
 * Insert prepared rows and settle idempotency keys: a row whose key already
 * existed is answered with the existing job when it is the same request
 * (core/idempotency.ts), and refused with an IdempotencyConflictError
 * otherwise. Rows with a unique key are
 * settled one statement each, in input order, as sequential enqueues would
 * be; the ordinary rows between them go in one statement per run. Results
 * follow input order.
 */
export async function insertJobs(store: JobStore, rows: readonly JobInsertRow[], db?: Queryable): Promise<EnqueuedJob[]> {
  // Two rows in one batch with the same key must be the same request.
  const firstByKey = new Map<string, JobInsertRow>();
  for (const row of rows) {
    if (row.idempotencyKey === null) continue;
    const key = `${row.tenant}\u0000${row.idempotencyKey}`;
    const first = firstByKey.get(key);
    if (!first) firstByKey.set(key, row);
    else checkSameRequest({ ...row, idempotencyKey: row.idempotencyKey }, requestOf(first), null);
  }
  if (!rows.some((row) => row.unique !== null)) return insertOrdinaryJobs(store, rows, db);
  const results: EnqueuedJob[] = [];
  let runStart = 0;
  for (let i = 0; i <= rows.length; i++) {
    const row = rows[i];
    if (row !== undefined && row.unique === null) continue;
    // A loop, not push(...run): a run may hold 100,000 jobs, more than a call's arguments allow.
    if (i > runStart) for (const job of await insertOrdinaryJobs(store, rows.slice(runStart, i), db)) results.push(job);
    if (row !== undefined) results.push(await insertUniqueJob(store, row as JobInsertRow & { unique: UniqueInsert }, db));
    runStart = i + 1;
  }
  return results;
}

/** Rows without a unique key: one statement (or one per row for a single row). */
async function insertOrdinaryJobs(store: JobStore, rows: readonly JobInsertRow[], db?: Queryable): Promise<EnqueuedJob[]> {
  // Aligned with rows: null where an idempotency key already existed.
  const inserted = rows.length === 1 ? [await store.jobInsert(rows[0]!, db)] : await store.jobInsertMany(rows, db);
  const results: EnqueuedJob[] = new Array(rows.length);
  const pending: number[] = [];
  inserted.forEach((job, i) => {
    if (job) results[i] = markCreated(job);
    else pending.push(i);
  });
  if (pending.length > 0) await resolveExisting(store, rows, pending, results, db);
  return results;
}

/** A job this call created. The store builds a fresh object for each: marked, not copied. */
export function markCreated(job: Job): EnqueuedJob {
  return Object.assign(job, { created: true });
}

async function resolveExisting(
  store: JobStore,
  rows: readonly JobInsertRow[],
  pending: number[],
  results: EnqueuedJob[],
  db?: Queryable,
): Promise<void> {
  const byTenant = new Map<string, number[]>();
  for (const i of pending) byTenant.set(rows[i]!.tenant, [...(byTenant.get(rows[i]!.tenant) ?? []), i]);
  for (const [tenant, indexes] of byTenant) {
    const found = await store.jobGetByIdempotencyKeys(
      tenant,
      indexes.map((i) => rows[i]!.idempotencyKey!),
      db,
    );
    const byKey = new Map(found.map((entry) => [entry.key, entry]));
    for (const i of indexes) {
      const row = rows[i]!;
      const existing = byKey.get(row.idempotencyKey!);
      if (existing === undefined) {
        // The conflicting insert was rolled back between our insert and this read.
        // Rare; the caller retries the whole enqueue.
        throw new RetryableEnqueue();
      }
      checkSameRequest({ ...row, idempotencyKey: row.idempotencyKey! }, existing.job, existing.job.id);
      results[i] = { ...existing.job, created: false };
    }
  }
}
