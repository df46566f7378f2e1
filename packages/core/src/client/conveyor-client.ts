import { Steps } from "./steps.js";
import type { SendEventInput, SentEvent } from "../core/steps.js";
import type { Logger } from "pino";
import { settlesWithin } from "../core/deadline.js";
import { DEFAULT_TRACING_ATTEMPTS, SHUTDOWN_CLEANUP_MS } from "../core/defaults.js";
import { NotFoundError, ValidationError } from "../core/errors.js";
import type { Job, JobWithExecutions, Page, WorkerInfo } from "../core/model.js";
import type { CronScheduleInfo } from "../core/cron.js";
import type { Pool, Queryable } from "../store/db.js";
import { Store } from "../store/store.js";
import { migrate, type MigrationResult, schemaStatus, type SchemaStatus } from "../store/migrate.js";
import type { JobFilter } from "../core/job-filter.js";
import type { JobCount, Overview } from "../core/overview.js";
import { checkJobFilter } from "./job-filter.js";
import { readOverview } from "./overview.js";
import { countJobs } from "./counts.js";
import { decodeCursor } from "./cursor.js";
import type { AnyJobDefinition, PayloadInput, PayloadOutput } from "../core/define-job.js";
import type { EnqueueOptions } from "./enqueue.js";
import type { EnqueuedJob } from "./enqueued-job.js";
import { GraphEnqueuer } from "./enqueue-flow.js";
import { type EnqueueManyItem, JobEnqueuer } from "./job-enqueuer.js";
import { type ConveyorOptions, resolveConveyorOptions, type ResolvedConveyorOptions } from "./options.js";
import type { PruneOptions, PruneResult } from "../core/retention.js";
import { pruneInBatches, resolvePruneOptions } from "./prune.js";
import { Tracing } from "../tracing/tracing.js";
import { ApiKeys } from "./api-keys.js";
import { BulkActionRunner } from "./bulk-action-runner.js";
import { BulkActions } from "./bulk-actions.js";
import type { ClientContext } from "./client-context.js";
import { DeadLetters } from "./dead-letters.js";
import { Flows } from "./flows.js";
import { KeyLimitsControl } from "./key-limits.js";
import { checkLimit, pageOf } from "./paging.js";
import { QueueOverview } from "./queue-overview.js";
import { Queues } from "./queues.js";
import { checkId, type TenantScope, scopeTenant } from "./scope.js";
import { checkKnownFields } from "../core/validate.js";
import { Throughput } from "./throughput.js";
import { waitForDatabase } from "../store/database-wait.js";
import { JobEndWaiter, type WaitForOptions } from "./wait-for.js";

export type { TenantScope } from "./scope.js";
export type { EnqueueManyItem } from "./job-enqueuer.js";
export type { ListDeadLettersFilter } from "./dead-letters.js";
export type { ListBulkActionsFilter } from "./bulk-actions.js";

/** Which jobs `listJobs` lists, and how many: a search filter, a page size and a cursor. */
export interface ListJobsFilter extends JobFilter {
  /**
   * Page size, 1 to `MAX_LIST_LIMIT` (1000).
   * @defaultValue `DEFAULT_LIST_LIMIT` (50)
   */
  limit?: number;
  /** `nextCursor` from the previous page. */
  cursor?: string | null;
}

/** Options of `conveyor.waitForDatabase`. */
export interface WaitForDatabaseOptions {
  /** Stop waiting when it aborts: the call then resolves `false` at once. Default: none (wait until the database answers). */
  signal?: AbortSignal;
}

/** What `cancel` did: cancelled now, cancellation requested of the running handler, or nothing (already terminal). */
export type CancelOutcome = "cancelled" | "cancel_requested" | "already_terminal";

/**
 * The client half of Conveyor: enqueue, inspect and cancel jobs here; the
 * rest is in its parts, each a property: `flows`, `deadLetters`, `queues`,
 * `keyLimits`, `bulkActions`, `apiKeys`, `throughput`, `queueOverview` and `steps`.
 * It holds a connection pool. Users make a `Conveyor` (src/conveyor.ts),
 * which is this client and also makes workers; this class knows nothing of
 * workers, so the worker can be built from what the client resolved
 * (`context`) without importing it.
 */
export class ConveyorClient {
  /** The options after validation and defaults, frozen. */
  readonly options: ResolvedConveyorOptions;
  /** Flows and batches: graphs of jobs that wait for each other. */
  readonly flows: Flows;
  /** The dead-letter queue: list, read, requeue, purge. */
  readonly deadLetters: DeadLetters;
  /** Queue and tenant settings: pause, resume, limits. */
  readonly queues: Queues;
  /** Limits per key of a queue, and what a key is doing. */
  readonly keyLimits: KeyLimitsControl;
  /** Bulk actions: retry, cancel, purge, reprioritize or move the jobs a filter selects. */
  readonly bulkActions: BulkActions;
  /** API keys of the HTTP API. */
  readonly apiKeys: ApiKeys;
  /** Jobs enqueued and attempts finished per minute. */
  readonly throughput: Throughput;
  /** Per-queue counts and settings, queue depth, workers with their jobs. */
  readonly queueOverview: QueueOverview;
  /** Durable execution: a job's steps, resume, rerun from a step, events. */
  readonly steps: Steps;
  /**
   * @internal What the client built from its options, shared with its
   * parts and with `Conveyor`, which makes workers from it.
   */
  protected readonly context: ClientContext;
  private readonly enqueuer: JobEnqueuer;
  private readonly waiter: JobEndWaiter;

  constructor(options: ConveyorOptions) {
    const resolved = resolveConveyorOptions(options);
    this.options = resolved.options;
    const pooled = this.options.pooler === "transaction";
    const store = new Store(this.options.pool, this.options.schema, pooled);
    // Lists and pages are read from the store of `readConnectionString`'s pool, else the client's.
    const reader = resolved.readPool ? new Store(resolved.readPool, this.options.schema, pooled) : store;
    const { tracing: tracingOption } = this.options;
    const tracing = new Tracing(tracingOption !== false, tracingOption === false ? DEFAULT_TRACING_ATTEMPTS : tracingOption.attempts);
    const runner = new BulkActionRunner(store.bulkActions, store.clock, this.options.logger);
    this.context = { store, reader, connection: resolved.connection, listenConnection: resolved.listenConnection, tracing, bulkActions: runner };
    const definitionOf = (job: AnyJobDefinition | string) => this.definitionOf(job);
    const graphs = new GraphEnqueuer(store, this.options.pool, definitionOf, tracing);
    this.enqueuer = new JobEnqueuer(store, this.options.pool, this.options.jobs, definitionOf, graphs, tracing);
    this.flows = new Flows(graphs, store, reader);
    this.deadLetters = new DeadLetters(store.deadLetters, reader.deadLetters);
    this.queues = new Queues(store);
    this.keyLimits = new KeyLimitsControl(store);
    this.bulkActions = new BulkActions(store.bulkActions, runner);
    this.apiKeys = new ApiKeys(store.apiKeys);
    this.throughput = new Throughput(reader.stats);
    this.queueOverview = new QueueOverview(reader, this.options);
    this.steps = new Steps(store);
    this.waiter = new JobEndWaiter(store, resolved.listenConnection, this.options.logger);
  }

  /** The connection pool (`options.pool`): pass it, or a client from it, as `tx` to enqueue inside your transaction. */
  get pool(): Pool {
    return this.options.pool;
  }

  /** The logger (`options.logger`). */
  get logger(): Logger {
    return this.options.logger;
  }

  /** Registered job kinds. */
  get jobs(): ReadonlyMap<string, AnyJobDefinition> {
    return this.options.jobs;
  }

  /**
   * Resolve `true` once the database answers, for a process that may start
   * before its database (pods and services start in any order); call it
   * before `migrate()`. A try that cannot connect (refused, unreachable,
   * the server starting up) is logged, one warning per try with its error
   * code and the next wait, and retried after a wait from
   * `DATABASE_WAIT_MIN_MS` (500 ms) doubling to `DATABASE_WAIT_MAX_MS`
   * (10 s). Other errors (a wrong password, a missing database) are thrown.
   * Resolves `false` at once when `options.signal` aborts (a SIGTERM, say).
   * `worker.start()` waits this way on its own.
   */
  async waitForDatabase(options: WaitForDatabaseOptions = {}): Promise<boolean> {
    checkKnownFields(options, { signal: true }, "a waitForDatabase option");
    return waitForDatabase(this.options.pool, {
      signal: options.signal,
      onWait: ({ code, message, attempt, retryInMs }) => this.logger.warn({ code, err: message, attempt, retryInMs }, "waiting for the database"),
    });
  }

  /** Apply pending migrations (safe to call from many processes at once). */
  migrate(): Promise<MigrationResult> {
    return migrate(this.options.pool, this.options.schema, { pooled: this.options.pooler === "transaction" });
  }

  /** Current and newest schema version, for readiness checks. */
  schemaStatus(): Promise<SchemaStatus> {
    return schemaStatus(this.options.pool, this.options.schema);
  }

  /**
   * Enqueue one job. The payload is validated by the kind's schema first;
   * nothing is written when anything is invalid.
   */
  async enqueue<D extends AnyJobDefinition>(job: D, payload: PayloadInput<D>, options?: EnqueueOptions): Promise<EnqueuedJob<PayloadOutput<D>>>;
  async enqueue(kind: string, payload: unknown, options?: EnqueueOptions): Promise<EnqueuedJob>;
  async enqueue(job: AnyJobDefinition | string, payload: unknown, options: EnqueueOptions = {}): Promise<EnqueuedJob> {
    return this.enqueuer.enqueue(job, payload, options);
  }

  /**
   * Enqueue many jobs (100,000 in a call is fine), all or nothing: either
   * every job is written or, when one is invalid or an insert fails, none is.
   * Up to ENQUEUE_CHUNK_ROWS jobs go in one statement; more go in statements
   * of that size inside one transaction (the caller's `tx`, else one of its
   * own), each chunk validated while the one before it is being inserted.
   * COPY_MIN_ROWS jobs or more without keys, outside a caller's `tx`, are
   * streamed by COPY instead. The choice is made in insert-strategy.ts.
   * Each item's payload is typed by its `job` when that is a definition.
   */
  enqueueMany<M extends ReadonlyArray<AnyJobDefinition | string>>(
    items: { readonly [K in keyof M]: EnqueueManyItem<M[K]> },
    options: { tx?: Queryable } = {},
  ): Promise<EnqueuedJob[]> {
    return this.enqueuer.enqueueMany(items as unknown as readonly EnqueueManyItem[], options);
  }

  /**
   * Send an event to the jobs waiting for it (`waitForEvent`): see `steps.send`.
   *
   * @example
   * await conveyor.sendEvent({ event: "invoice.paid", key: "acct_1", payload: { amount: 42 } });
   */
  sendEvent(input: SendEventInput): Promise<SentEvent> {
    return this.steps.send(input);
  }

  /**
   * A job with its executions and its requeues (each requeue from the
   * dead-letter queue, bulk retry, resume and rerun from a step, with the
   * step or the bulk action), or null when it does not exist (or belongs to
   * another tenant).
   */
  async getJob(id: string, scope: TenantScope = {}): Promise<JobWithExecutions | null> {
    checkId(id);
    const job = await this.context.reader.jobs.jobGet(id, scopeTenant(scope));
    if (!job) return null;
    return { ...job, ...(await this.context.reader.jobs.jobTimeline(id)) };
  }

  /**
   * Wait for a job to end (succeeded, cancelled or dead) and return it, as
   * `getJob` reads it then. Woken at the commit of the end by a
   * notification (LISTEN on a connection of its own while waits run), and
   * reading the job every `WAIT_POLL_INTERVAL_MS` (1 s) as the fallback.
   * Reads the primary, never the read replica. Waiting changes nothing
   * about the job.
   *
   * Throws `NotFoundError` when there is no such job (or it is another
   * tenant's, with `tenant`), or it is deleted while waited for;
   * `WaitTimeoutError` (code `WAIT_TIMEOUT`) when it has not ended within
   * `timeoutMs`; `WaitAbortedError` (code `WAIT_ABORTED`) when `signal`
   * aborts; `ValidationError` for an id that is not a UUID or a bad
   * `timeoutMs`.
   *
   * @example
   * const { id } = await conveyor.enqueue(sendEmail, payload);
   * const job = await conveyor.waitFor(id, { timeoutMs: 30_000 });
   * console.log(job.status, job.result);
   */
  waitFor(id: string, options: WaitForOptions = {}): Promise<JobWithExecutions> {
    return this.waiter.waitFor(id, options);
  }

  /**
   * Jobs matching a filter, newest first, with cursor pagination. Every
   * field given must match (see `JobFilter`); unknown fields are refused.
   * Throws `SearchTimeoutError` when the page is not read within
   * `searchTimeoutMs` (a filter no index serves, such as an error text
   * alone, over many jobs): narrow it by queue, kind, status or a time range.
   *
   * @example
   * const page = await conveyor.listJobs({ queue: "mail", status: ["dead", "retrying"], error: "timeout", limit: 20 });
   * const next = await conveyor.listJobs({ queue: "mail", status: ["dead", "retrying"], error: "timeout", limit: 20, cursor: page.nextCursor });
   */
  async listJobs(filter: ListJobsFilter = {}): Promise<Page<Job>> {
    const { limit: pageSize, cursor, ...search } = filter;
    const limit = checkLimit(pageSize);
    const values = checkJobFilter(search);
    const items = await this.context.reader.search.jobSearch(values, decodeCursor(cursor), limit + 1, this.options.searchTimeoutMs);
    return pageOf(items, limit);
  }

  /**
   * How many jobs match a filter (as `listJobs` filters): exact up to
   * `exactCountLimit` (10,000), beyond it, or when counting does not finish
   * within `searchTimeoutMs`, the planner's estimate from table statistics,
   * with `estimated: true`. A count never reads more than the limit's worth
   * of rows, at ten jobs or ten million.
   *
   * @example
   * const { count, estimated } = await conveyor.countJobs({ queue: "mail", status: "dead" });
   */
  async countJobs(filter: JobFilter = {}): Promise<JobCount> {
    const values = checkJobFilter(filter);
    return countJobs(this.context.reader.search, values, this.options.exactCountLimit, this.options.searchTimeoutMs);
  }

  /**
   * Everything an operator reads first, for every tenant or one: per queue
   * its jobs by state (exact up to 1,000 per state, estimated beyond, and
   * for succeeded and cancelled), its oldest ready job's age and its attempts in
   * the last 15 minutes; per kind the same attempts; the ready job that has
   * waited longest; running jobs past their lease; the most frequent errors;
   * and live workers with their load. Answered from indexes and statistics,
   * never by reading the jobs table through; a part that does not finish
   * within `searchTimeoutMs` is left out and named in `incomplete`.
   *
   * @example
   * const { queues, stuck, topErrors } = await conveyor.overview({ tenant: "acme" });
   */
  async overview(scope: TenantScope = {}): Promise<Overview> {
    return readOverview(this.context.reader, scopeTenant(scope), this.options);
  }

  /**
   * Cancel a job: queued or retrying ones at once; a running one has its
   * handler's signal aborted as soon as the cancel commits (its worker is
   * notified through its LISTEN connection; a worker that only polls sees
   * it at its next heartbeat); terminal jobs are left as they are. Throws NotFoundError when there is no such job.
   */
  async cancel(
    id: string,
    scope: TenantScope = {},
  ): Promise<{
    /** What the call did. */
    outcome: CancelOutcome;
    /** The job after the call. */
    job: Job;
  }> {
    checkId(id);
    const tenant = scopeTenant(scope);
    const changed = await this.context.store.jobs.jobCancel(id, tenant);
    if (changed) return { outcome: changed.status === "running" ? "cancel_requested" : "cancelled", job: changed };
    const job = await this.context.store.jobs.jobGet(id, tenant);
    if (!job) throw new NotFoundError(`job ${id} not found`);
    return { outcome: "already_terminal", job };
  }

  /**
   * Delete succeeded and cancelled jobs finished longer ago than `finishedMs`
   * (default 7 days) and dead letters older than `deadLetterMs` (default 30
   * days), with their executions, in batches of `batchSize` rows (default
   * 1,000), each its own short statement. Safe to run from many processes at
   * once: rows another prune holds are skipped, never waited for. Workers do
   * this on their own (worker option `retention`). A registered kind whose
   * definition sets `retention` is pruned by its own ages instead.
   *
   * @example
   * const { jobs, deadLetters } = await conveyor.prune({ finishedMs: 24 * 60 * 60 * 1000 });
   */
  async prune(options: PruneOptions = {}): Promise<PruneResult> {
    return pruneInBatches(this.context.store.retention, resolvePruneOptions(options), this.options.jobs.values(), options.signal);
  }

  /** Workers that reported in recently, with the jobs each is running. */
  listWorkers(): Promise<WorkerInfo[]> {
    return this.context.store.workers.workerList();
  }

  /**
   * Cron schedules as stored (by name), with `nextTickAt`, the first tick not
   * yet enqueued (in the past when no worker has run the schedule since), and
   * `lastTickAt`. A schedule appears once a worker running its kind started.
   */
  async listSchedules(scope: TenantScope = {}): Promise<CronScheduleInfo[]> {
    return this.context.store.cron.cronScheduleList(scopeTenant(scope));
  }

  /**
   * Send the wake-ups of jobs already enqueued, then close the pool if
   * Conveyor created it. Resolves within `SHUTDOWN_CLEANUP_MS` whatever the
   * network does (connections it could not close are left to the OS).
   */
  async close(): Promise<void> {
    const closing = (async () => {
      // Bulk actions stop between batches and are let go of, for another process to resume.
      await this.context.bulkActions.close();
      await this.waiter.close();
      // Wake-ups of jobs already enqueued go out first: a short-lived process
      // (a script, `conveyor enqueue`) must not leave its jobs to the next poll.
      await this.context.store.jobs.drainWakeUps();
      if (this.options.ownsPool) await this.options.pool.end();
      if (this.context.reader !== this.context.store) await this.context.reader.pool.end();
    })();
    // A connection on a dead network can keep pool.end() waiting for the
    // kernel's TCP timeouts; close() gives up on it after SHUTDOWN_CLEANUP_MS.
    if (await settlesWithin(closing, SHUTDOWN_CLEANUP_MS)) return closing;
    closing.catch(() => {});
    this.logger.warn({ waitedMs: SHUTDOWN_CLEANUP_MS }, "closing the database connections took too long; left them to the operating system");
  }

  private definitionOf(job: AnyJobDefinition | string): AnyJobDefinition {
    if (typeof job !== "string") return job;
    const definition = this.options.jobs.get(job);
    if (!definition) {
      throw new ValidationError(`unknown job kind ${JSON.stringify(job)}`, [{ path: "kind", message: "unknown job kind" }]);
    }
    return definition;
  }
}
