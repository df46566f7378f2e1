import type { ClaimedJob, Job, JobExecution, JobRequeue } from "../core/model.js";
import type { ExecutionOutcome } from "../core/states.js";
import { type AttemptEndEvent, decideExpiredLease } from "../core/outcome.js";
import type { TraceContext } from "../core/trace-context.js";
import { DEFAULT_KEEP_SUCCEEDED, ENQUEUE_CHUNK_ROWS } from "../core/defaults.js";
import { copyIn } from "./copy-in.js";
import { copyLines, runAtMicros } from "./copy-text.js";
import type { Pool, Queryable } from "./db.js";
import { booleanArray, numberArray, textArray, timestampArray, uuidArray } from "./array-literals.js";
import { runJobClaim } from "./claim-store.js";
import type { BoundQuery, Queries } from "./queries.js";
import { QueueWaker } from "./queue-waker.js";
import { translatePgError } from "./pg-errors.js";
import { runQuery } from "./run-query.js";
import { type JobFilterValues, jobFilterCondition, jobSearchStatement } from "./sql/job-filter.js";
import { withTransaction } from "./transaction.js";
import type { JobInsertRow, UniqueInsert } from "./job-insert-row.js";
import { insertedJobAt, rowToExecution, rowToInsertedJob, rowToJob, rowToRequeue } from "./rows.js";

/**
 * One attempt that did not succeed, as the worker decided it
 * (decideOutcome in core/outcome.ts); jobEndAttempts applies it as given,
 * except that a requested cancel turns it into `cancelled`.
 */
export interface AttemptEnd {
  jobId: string;
  executionId: string;
  outcome: Extract<ExecutionOutcome, "failed" | "timeout" | "retry_after" | "interrupted">;
  /** JSON text of a StoredError, or null. */
  error: string | null;
  /** The end's event of the transition table: what it writes is the table's (store/sql/status-writes.ts). */
  event: Exclude<AttemptEndEvent, "attempt_succeeded" | "cancel_observed" | "lease_expired" | "lease_expired_exhausted">;
  /** Delay before the job may run again, for an event whose `run_at` is `after_delay`. */
  delayMs: number;
}

export interface HeldJob {
  jobId: string;
  executionId: string;
}

export interface LeaseState extends HeldJob {
  cancelRequested: boolean;
  /** False when another transaction held the row: still ours, lease left as it was. */
  renewed: boolean;
}

/**
 * A job inserted in a transaction whose now() was `nowMicros` (epoch µs),
 * built without reading its row back: created_at is now(), and run_at what
 * the insert computed from it (runAtMicros), both in whole milliseconds as
 * INSERTED_COLUMNS returns them.
 */
function insertedJob(row: JobInsertRow, nowMicros: number): Job {
  return insertedJobAt(row, Math.floor(nowMicros / 1000), Math.floor(runAtMicros(row, nowMicros) / 1000));
}

/**
 * All of Conveyor's SQL, behind methods named entity first. Each method runs
 * on the store's own pool unless a `db` is passed (the caller's transaction).
 * On the store's own pool the statements queries.ts names are prepared once
 * per connection and the rest sent unnamed; on a caller's connection every
 * statement runs unnamed, since it may be any driver.
 */
export class JobStore {
  readonly schema: string;
  private readonly pool: Queryable;
  private readonly q: Queries;

  private readonly waker: QueueWaker;
  /** The LISTEN channel of this schema's workers (the insert trigger's too). */
  private readonly channel: string;
  /** Inserts on the store's own pool running now (see `inserting`). */
  private insertsInFlight = 0;

  /** `queries`: the statements bound once for `schema` (bindQueries, made by Store). */
  constructor(pool: Queryable, queries: Queries, schema: string) {
    this.pool = pool;
    this.schema = schema;
    this.q = queries;
    this.channel = `${schema}:jobs`;
    this.waker = new QueueWaker((queues) => this.run(this.q.queuesWake, [this.channel, queues]));
  }

  /** Resolves once the wake-ups of inserts already committed have been sent. */
  drainWakeUps(): Promise<void> {
    return this.waker.drain();
  }

  /**
   * Run an insert, telling it how the workers are woken (its statement's
   * $11, "wake after commit"), and count it while it runs.
   * - On a caller's connection the job appears only at the caller's commit:
   *   the notification the insert queues (its own, or the trigger's) goes out then.
   * - On the store's own pool an insert is its own transaction. Alone in
   *   flight, it notifies inside its commit: the cheapest for
   *   one caller (sequential enqueues: 1,549-1,632/s, against 1,154-1,192
   *   with a wake-up statement after each commit).
   * - With another insert of this store in flight, it leaves the wake-up
   *   until after its commit (`insert` then calls wakeFor), so concurrent
   *   enqueues never wait for each other's flush to take the notify lock
   *   (routines/jobs-notify-ready.ts). Of this store's inserts, at most one at a time
   *   notifies inside its commit.
   */
  private async inserting<R>(db: Queryable | undefined, insert: (wakeAfterCommit: boolean) => Promise<R>): Promise<R> {
    if (db !== undefined && db !== this.pool) return insert(false);
    const wakeAfterCommit = this.insertsInFlight > 0;
    this.insertsInFlight += 1;
    try {
      return await insert(wakeAfterCommit);
    } finally {
      this.insertsInFlight -= 1;
    }
  }

  /** After a commit: wake the workers of the rows' queues whose jobs are ready now. */
  private wakeFor(rows: readonly JobInsertRow[]): void {
    const now = Date.now();
    for (const row of rows) {
      // The trigger decides by run_at <= now() on the database clock; a job due
      // within a clock skew of now is picked up by the next poll either way.
      const ready = row.runAt === null ? !(row.delayMs !== null && row.delayMs > 0) : row.runAt.getTime() <= now;
      if (ready) this.waker.wake(row.queue);
    }
  }

  /** On a caller's connection every statement runs unnamed: it may be any driver. */
  private run(query: BoundQuery, values: unknown[], db?: Queryable) {
    if (db === undefined || db === this.pool) return runQuery(this.pool, query, values);
    return runQuery(db, { ...query, prepared: false }, values);
  }


  /** Insert one job; null when its idempotency key already exists for the tenant. */
  jobInsert(row: JobInsertRow, db?: Queryable): Promise<Job | null> {
    return this.inserting(db, async (wakeAfterCommit) => {
      const { rows } = await this.run(
        row.idempotencyKey === null ? this.q.jobInsertKeyless : this.q.jobInsert,
        [
          row.id, row.tenant, row.queue, row.kind, row.payload, row.priority, row.maxAttempts, row.runAt, row.delayMs, row.idempotencyKey,
          wakeAfterCommit, this.channel, row.traceContext ?? null, row.limitKey ?? null,
        ],
        db,
      );
      if (!rows[0]) return null;
      if (wakeAfterCommit) this.wakeFor([row]);
      return rowToInsertedJob(row, rows[0]);
    });
  }

  /**
   * Insert many jobs in one statement. The result is aligned with `input`:
   * null where the row was skipped because its idempotency key exists.
   */
  async jobInsertMany(input: readonly JobInsertRow[], db?: Queryable): Promise<Array<Job | null>> {
    const timed = input.some((row) => row.runAt !== null);
    const delayed = input.some((row) => row.delayMs !== null);
    const keyed = input.some((row) => row.idempotencyKey !== null);
    const traced = input.some((row) => row.traceContext != null);
    const limitKeyed = input.some((row) => row.limitKey != null);
    // A column null in every row goes as one NULL: unnest() pads it to the ids' length.
    const columns = [
      textArray(input.map((row) => row.id)),
      textArray(input.map((row) => row.tenant)),
      textArray(input.map((row) => row.queue)),
      textArray(input.map((row) => row.kind)),
      textArray(input.map((row) => row.payload)),
      numberArray(input.map((row) => row.priority)),
      numberArray(input.map((row) => row.maxAttempts)),
      timed ? timestampArray(input.map((row) => row.runAt)) : null,
      delayed ? numberArray(input.map((row) => row.delayMs)) : null,
      keyed ? textArray(input.map((row) => row.idempotencyKey)) : null,
    ];
    const traceContexts = traced ? textArray(input.map((row) => row.traceContext ?? null)) : null;
    const limitKeys = limitKeyed ? textArray(input.map((row) => row.limitKey ?? null)) : null;
    return this.inserting(db, async (wakeAfterCommit) => {
      if (!keyed) {
        const { rows } = await this.run(this.q.jobInsertManyKeyless, [...columns, wakeAfterCommit, traceContexts, limitKeys], db);
        const nowMicros = Number(rows[0].now_us);
        if (wakeAfterCommit) this.wakeFor(input);
        return input.map((row) => insertedJob(row, nowMicros));
      }
      const { rows } = await this.run(this.q.jobInsertMany, [...columns, wakeAfterCommit, traceContexts, limitKeys], db);
      const returned = new Map(rows.map((row) => [row.id as string, row]));
      const inserted: JobInsertRow[] = [];
      const jobs = input.map((row) => {
        const found = returned.get(row.id);
        if (!found) return null;
        inserted.push(row);
        return rowToInsertedJob(row, found);
      });
      if (wakeAfterCommit) this.wakeFor(inserted);
      return jobs;
    });
  }

  /**
   * Insert jobs by COPY, in a transaction of its own on the store's pool (a
   * `pg.Pool`): for large batches, faster than one INSERT of arrays, and
   * `chunks` is read as the rows go out, so the caller validates the next
   * chunk while the server inserts the last. Every row must be without an
   * idempotency key and a unique key: COPY cannot settle a conflict. A
   * COPY statement carries at most ENQUEUE_CHUNK_ROWS rows, for the same
   * reason an INSERT does (the notify trigger's transition table).
   * All or nothing: any error rolls the whole call back.
   */
  jobCopyMany(chunks: AsyncIterable<readonly JobInsertRow[]>): Promise<Job[]> {
    const pool = this.pool as Pool;
    if (typeof pool.connect !== "function") throw new TypeError("jobCopyMany needs the store to run on a pg.Pool");
    return this.inserting(undefined, async (wakeAfterCommit) => {
      const rows: JobInsertRow[] = [];
      const jobs: Job[] = [];
      await withTransaction(pool, async (client) => {
        const begun = await runQuery(client, this.q.jobCopyBegin, [wakeAfterCommit]);
        const nowMicros = Number(begun.rows[0].now_us);
        // Each chunk's jobs are built while the server inserts it, not after the commit.
        const sent = (chunk: readonly JobInsertRow[]) => {
          for (const row of chunk) {
            rows.push(row);
            jobs.push(insertedJob(row, nowMicros));
          }
        };
        try {
          await copyIn(client, this.q.jobCopyIn.text, chunks, (chunk) => copyLines(chunk, nowMicros), sent, ENQUEUE_CHUNK_ROWS);
        } catch (error) {
          throw translatePgError(error);
        }
      });
      if (wakeAfterCommit) this.wakeFor(rows);
      return jobs;
    });
  }

  /**
   * Insert a job with a unique key, or settle with the job holding the key
   * in the same statement: the inserted job, the holder as replaced (its id
   * differs from `row.id`), or null when nothing was written.
   */
  async jobInsertUnique(row: JobInsertRow & { unique: UniqueInsert }, db?: Queryable): Promise<Job | null> {
    const { unique } = row;
    const { rows } = await this.run(
      this.q.jobInsertUnique,
      [
        row.id, row.tenant, row.queue, row.kind, row.payload, row.priority, row.maxAttempts, row.runAt, row.delayMs, row.idempotencyKey,
        unique.key, unique.states, unique.onConflict === "replace", unique.replacePriority, row.traceContext ?? null, row.limitKey ?? null,
      ],
      db,
    );
    return rows[0] ? rowToJob(rows[0]) : null;
  }

  /** The stored trace contexts of these jobs and of their dependencies, by job id. */
  async jobTraceContexts(ids: readonly string[]): Promise<Map<string, { own: TraceContext | null; dependencies: TraceContext[] }>> {
    const { rows } = await this.run(this.q.jobTraceContexts, [ids]);
    return new Map(rows.map((row) => [row.id as string, { own: (row.trace_context as TraceContext | null) ?? null, dependencies: row.dependency_contexts }]));
  }

  /** The job holding a unique key in a tenant, or null when no job holds it. */
  async jobGetByUniqueKey(tenant: string, key: string, db?: Queryable): Promise<Job | null> {
    const { rows } = await this.run(this.q.jobGetByUniqueKey, [tenant, key], db);
    return rows[0] ? rowToJob(rows[0]) : null;
  }

  /** Jobs holding these idempotency keys, each with the key it answers. */
  async jobGetByIdempotencyKeys(
    tenant: string,
    keys: readonly string[],
    db?: Queryable,
  ): Promise<Array<{ job: Job; key: string }>> {
    const { rows } = await this.run(this.q.jobGetByIdempotencyKeys, [tenant, keys], db);
    return rows.map((row) => ({ job: rowToJob(row), key: row.requested_key }));
  }

  /** Record a wait for job `id`'s end, for at most `ms` (routines/jobs-notify-ended.ts NOTIFYs its end). */
  async jobWaitAdd(id: string, waiter: string, ms: number): Promise<void> {
    await this.run(this.q.jobWaitAdd, [id, waiter, ms]);
  }

  /** Forget a wait recorded by jobWaitAdd. */
  async jobWaitRemove(id: string, waiter: string): Promise<void> {
    await this.run(this.q.jobWaitRemove, [id, waiter]);
  }

  async jobGet(id: string, tenant: string | null, db?: Queryable): Promise<Job | null> {
    const { rows } = await this.run(this.q.jobGet, [id, tenant], db);
    return rows[0] ? rowToJob(rows[0]) : null;
  }

  async executionListByJob(jobId: string, db?: Queryable): Promise<JobExecution[]> {
    const { rows } = await this.run(this.q.executionListByJob, [jobId], db);
    return rows.map(rowToExecution);
  }

  /** A job's requeues, resumes, reruns and bulk retries, oldest first. */
  async requeueListByJob(jobId: string, db?: Queryable): Promise<JobRequeue[]> {
    const { rows } = await this.run(this.q.requeueListByJob, [jobId], db);
    return rows.map(rowToRequeue);
  }

  /** What a job's timeline shows: its attempts and its requeues, each oldest first (read side by side). */
  async jobTimeline(jobId: string): Promise<{ executions: JobExecution[]; requeues: JobRequeue[] }> {
    const [executions, requeues] = await Promise.all([this.executionListByJob(jobId), this.requeueListByJob(jobId)]);
    return { executions, requeues };
  }

  /** Jobs matching `filter`, newest first, older than `beforeId` when given. Planned for the filters given (unnamed). */
  async jobSearch(filter: JobFilterValues, beforeId: string | null, limit: number, db?: Queryable): Promise<Job[]> {
    const values: unknown[] = [];
    const where = jobFilterCondition(filter, values);
    const before = beforeId === null ? "" : `\n  AND j.id < $${values.push(beforeId)}::uuid`;
    const text = jobSearchStatement(this.schema, filter, where + before, `$${values.push(limit)}`);
    const { rows } = await runQuery(db ?? this.pool, { name: "jobSearch", text, prepared: false }, values);
    return rows.map(rowToJob);
  }

  /** Cancel now (queued/retrying) or request it (running); null when not cancellable or not found. */
  async jobCancel(id: string, tenant: string | null, db?: Queryable): Promise<Job | null> {
    const { rows } = await this.run(this.q.jobCancel, [id, tenant], db);
    return rows[0] ? rowToJob(rows[0]) : null;
  }

  /** Claim up to `limit` ready jobs, planned for these values (a worker claims through its ClaimStore instead). */
  jobClaim(workerId: string, limit: number, kinds: readonly string[], queues: readonly string[] | null, leaseMs: number): Promise<ClaimedJob[]> {
    return runJobClaim(this.pool, this.q.jobClaim, workerId, limit, kinds, queues, leaseMs, Date.now());
  }

  /** Renew leases; returns the jobs still held (with their cancel flag), renewed unless their row was busy. Missing ones were lost. */
  async jobHeartbeat(held: readonly HeldJob[], leaseMs: number): Promise<LeaseState[]> {
    if (held.length === 0) return [];
    const { rows } = await this.run(this.q.jobHeartbeat, [held.map((h) => h.jobId), held.map((h) => h.executionId), leaseMs]);
    return rows.map((row) => ({ jobId: row.id, executionId: row.execution_id, cancelRequested: row.cancel_requested, renewed: row.renewed }));
  }

  /**
   * Mark attempts succeeded (`keep`: whether the job stays in history, true
   * when absent); returns the
   * execution ids actually written (the rest were fenced).
   */
  async jobComplete(done: ReadonlyArray<HeldJob & { result: string | null; keep?: boolean }>): Promise<Set<string>> {
    if (done.length === 0) return new Set();
    const jobIds = new Array<string>(done.length);
    const executionIds = new Array<string>(done.length);
    const results = new Array<string | null>(done.length);
    const kept = new Array<boolean>(done.length);
    for (let i = 0; i < done.length; i++) {
      const d = done[i]!;
      jobIds[i] = d.jobId;
      executionIds[i] = d.executionId;
      results[i] = d.result;
      kept[i] = d.keep ?? DEFAULT_KEEP_SUCCEEDED;
    }
    const { rows } = await this.run(this.q.jobComplete, [uuidArray(jobIds), uuidArray(executionIds), textArray(results), booleanArray(kept)]);
    return new Set(rows.map((row) => row.execution_id as string));
  }

  /** End attempts that did not succeed; returns the jobs as moved (fenced ones are absent). */
  async jobEndAttempts(ends: readonly AttemptEnd[]): Promise<Job[]> {
    if (ends.length === 0) return [];
    const { rows } = await this.run(this.q.jobEndAttempts, [
      ends.map((e) => e.jobId),
      ends.map((e) => e.executionId),
      ends.map((e) => e.outcome),
      ends.map((e) => e.error),
      ends.map((e) => e.delayMs),
      ends.map((e) => e.event),
    ]);
    return rows.map(rowToJob);
  }

  /**
   * End the attempts of up to `limit` running jobs whose lease expired:
   * back to the queue, to the dead-letter queue when their attempts are
   * spent, or cancelled when a cancel was requested. Returns the jobs as
   * moved. In one transaction on the store's pool: lock the rows and read
   * what the decision needs (jobLockExpired), decide each job in core
   * (decideExpiredLease), apply the decisions in one statement
   * (jobEndExpired). On a caller's connection (`db`), the two statements
   * run in the caller's transaction, which should be open.
   */
  async jobReclaimExpired(limit: number, db?: Queryable): Promise<Job[]> {
    if (db !== undefined && db !== this.pool) return this.reclaimOn(db, false, limit);
    return withTransaction(this.pool as Pool, (client) => this.reclaimOn(client, true, limit));
  }

  /** The reclaim sweep's two statements on one connection; `own`: a client of the store's pool (statements prepared as queries.ts says). */
  private async reclaimOn(db: Queryable, own: boolean, limit: number): Promise<Job[]> {
    const query = (q: BoundQuery) => (own ? q : { ...q, prepared: false });
    const { rows: locked } = await runQuery(db, query(this.q.jobLockExpired), [limit]);
    if (locked.length === 0) return [];
    const decided = locked.map((row) => ({
      row,
      decision: decideExpiredLease({ attempt: row.attempts, maxAttempts: row.max_attempts, cancelRequested: row.cancel_requested }),
    }));
    const { rows } = await runQuery(db, query(this.q.jobEndExpired), [
      decided.map((d) => d.row.id),
      decided.map((d) => d.row.execution_id),
      decided.map((d) => d.row.cancel_requested),
      decided.map((d) => d.decision.event),
      decided.map((d) => d.decision.outcome),
      decided.map((d) => JSON.stringify({ name: "LeaseExpired", message: `lease expired on worker ${d.row.worker_id}` })),
      decided.map((d) => d.decision.delayMs),
    ]);
    return rows.map(rowToJob);
  }
}
