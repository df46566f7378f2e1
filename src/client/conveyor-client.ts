import type { Logger } from "pino";
import { settlesWithin } from "../core/deadline.js";
import {
  BULK_ACTION_SWEEP_LIMIT,
  COPY_CHUNK_ROWS,
  DEFAULT_LIST_LIMIT,
  DEFAULT_QUEUE,
  DEFAULT_TENANT,
  DEFAULT_TRACING_ATTEMPTS,
  ENQUEUE_CHUNK_ROWS,
  MAX_LIST_LIMIT,
  SHUTDOWN_CLEANUP_MS,
} from "../core/defaults.js";
import { NotFoundError, ValidationError } from "../core/errors.js";
import { isUuid } from "../core/ids.js";
import type { DeadLetter, Job, JobWithExecutions, Page, WorkerInfo } from "../core/model.js";
import type { QueueLimitsInput, QueueSettings, TenantSettings } from "../core/queue-settings.js";
import { isJobStatus, JOB_STATUSES, type JobStatus } from "../core/states.js";
import type { CronScheduleInfo } from "../core/cron.js";
import type { FlowCancelResult, FlowDetail, FlowInfo, JobDependencies } from "../core/flows.js";
import type { ConnectionConfig, Pool, Queryable } from "../store/db.js";
import type { JobInsertRow } from "../store/job-insert-row.js";
import { Store } from "../store/store.js";
import { withTransaction } from "../store/transaction.js";
import { migrate, type MigrationResult, schemaStatus, type SchemaStatus } from "../store/migrate.js";
import type { JobFilter } from "../core/job-filter.js";
import type { JobCount, Overview } from "../core/overview.js";
import { checkJobFilter } from "./job-filter.js";
import { readOverview } from "./overview.js";
import { countJobs } from "./counts.js";
import { decodeCursor, encodeCursor } from "./cursor.js";
import type { AnyJobDefinition, PayloadInput, PayloadOutput } from "../core/define-job.js";
import { type EnqueueOptions, insertJobs, markCreated, prepareInsert } from "./enqueue.js";
import type { EnqueuedJob } from "./enqueued-job.js";
import { withEnqueueRetry } from "./enqueue-race.js";
import { type BatchInput, type EnqueuedBatch, type EnqueuedFlow, type FlowInput, GraphEnqueuer } from "./enqueue-flow.js";
import { chooseInsertStrategy } from "./insert-strategy.js";
import { type ConveyorOptions, resolveConveyorOptions, type ResolvedConveyorOptions } from "./options.js";
import type { PruneOptions, PruneResult } from "../core/retention.js";
import { pruneInBatches, resolvePruneOptions } from "./prune.js";
import { QueueLimits } from "./queue-limits.js";
import { type ProducerInfo, Tracing } from "../tracing/tracing.js";
import { KeyLimitsControl } from "./key-limits.js";
import type { KeyLimitSettings, KeyLimitsInput, KeyLoad, KeyStatus } from "../core/key-limits.js";
import type { BulkAction, BulkActionInput } from "../core/bulk-actions.js";
import { BulkActionRunner, type RunBulkActionOptions } from "./bulk-actions.js";

/** Restrict reads and writes to one tenant; omit (or null) for all tenants (admin). */
export interface TenantScope {
  /** The tenant; omit or null for all tenants. */
  tenant?: string | null;
}

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

/** Which dead letters `listDeadLetters` lists: every field optional, all given must match. */
export interface ListDeadLettersFilter extends TenantScope {
  /** Only dead letters of this kind. */
  kind?: string;
  /** Only dead letters from this queue. */
  queue?: string;
  /**
   * Page size, 1 to `MAX_LIST_LIMIT` (1000).
   * @defaultValue `DEFAULT_LIST_LIMIT` (50)
   */
  limit?: number;
  /** `nextCursor` from the previous page. */
  cursor?: string | null;
}

/** Which bulk actions `listBulkActions` lists: a tenant's (default: every tenant's), a page size and a cursor. */
export interface ListBulkActionsFilter extends TenantScope {
  /**
   * Page size, 1 to `MAX_LIST_LIMIT` (1000).
   * @defaultValue `DEFAULT_LIST_LIMIT` (50)
   */
  limit?: number;
  /** `nextCursor` from the previous page. */
  cursor?: string | null;
}

/** One entry of `enqueueMany` (dependencies are `enqueue`'s and `enqueueFlow`'s). */
export type EnqueueManyItem = {
  /** The job definition, or its kind name. */
  job: AnyJobDefinition | string;
  /** The payload, validated by the kind's schema. */
  payload: unknown;
} & Omit<EnqueueOptions, "tx" | "dependsOn" | "onDependencyFailure">;

/** What `cancel` did: cancelled now, cancellation requested of the running handler, or nothing (already terminal). */
export type CancelOutcome = "cancelled" | "cancel_requested" | "already_terminal";

/**
 * What the layers above the client need from it and its users do not: the
 * store (workers write through the same one, tests read through it) and how its
 * connections are made (workers open theirs the same way). Not exported
 * from the package; `clientInternals` reads it.
 */
export interface ClientInternals {
  /** The client's one Store: its pool, its bound statements, its clock (job and execution ids are made from it). */
  readonly store: Store;
  readonly connection: ConnectionConfig;
  /** How workers open their LISTEN connection; null when they poll (a transaction pooler without a direct URL). */
  readonly listenConnection: ConnectionConfig | null;
  /** Where overviews read: a read replica's store (`readConnectionString`), else `store`. */
  readonly reader: Store;
  /** OpenTelemetry spans of this client and its workers (src/tracing). */
  readonly tracing: Tracing;
  /** The bulk actions this client runs; its `tuning` sizes their batches (the CLI and tests set it). */
  readonly bulkActions: BulkActionRunner;
}

const internals = new WeakMap<ConveyorClient, ClientInternals>();

/** The store and connection settings behind a client, for the layers above it (see ClientInternals). */
export function clientInternals(client: ConveyorClient): ClientInternals {
  return internals.get(client)!;
}

/**
 * The client half of Conveyor: enqueue, inspect, cancel, manage dead
 * letters, queues and schedules. It holds a connection pool. Users make a
 * `Conveyor` (src/conveyor.ts), which is this client and also makes
 * workers; this class knows nothing of workers, so the worker can be built
 * from what the client resolved without importing it.
 */
export class ConveyorClient {
  /** The options after validation and defaults, frozen. */
  readonly options: ResolvedConveyorOptions;
  private readonly store: Store;
  private readonly limits: QueueLimits;
  private readonly graphs: GraphEnqueuer;
  /** Where lists and pages are read: the store of `readConnectionString`'s pool, else the client's. */
  private readonly reader: Store;
  private readonly tracing: Tracing;
  private readonly keyLimits: KeyLimitsControl;
  private readonly bulkActions: BulkActionRunner;

  constructor(options: ConveyorOptions) {
    const resolved = resolveConveyorOptions(options);
    this.options = resolved.options;
    this.store = new Store(this.options.pool, this.options.schema, this.options.pooler === "transaction");
    this.reader = resolved.readPool ? new Store(resolved.readPool, this.options.schema, this.options.pooler === "transaction") : this.store;
    const { tracing } = this.options;
    this.tracing = new Tracing(tracing !== false, tracing === false ? DEFAULT_TRACING_ATTEMPTS : tracing.attempts);
    this.bulkActions = new BulkActionRunner(this.store.bulkActions, this.store.clock, this.options.logger);
    internals.set(this, {
      store: this.store,
      reader: this.reader,
      connection: resolved.connection,
      listenConnection: resolved.listenConnection,
      tracing: this.tracing,
      bulkActions: this.bulkActions,
    });
    this.limits = new QueueLimits(this.store);
    this.graphs = new GraphEnqueuer(this.store, this.options.pool, (job) => this.definitionOf(job), this.tracing);
    this.keyLimits = new KeyLimitsControl(this.store);
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
    if (options.dependsOn !== undefined) return this.graphs.enqueueDependent(this.definitionOf(job), payload, options);
    const { tx, dependsOn: _dependsOn, onDependencyFailure: _policy, ...rest } = options;
    const row = await prepareInsert(this.definitionOf(job), payload, rest, await this.store.clock.now());
    const span = { queue: row.queue, kind: row.kind, tenant: row.tenant, jobId: row.id, count: 1 };
    return this.tracing.produce(span, options.traceContext, async (traceContext) => {
      if (traceContext !== undefined) row.traceContext = traceContext;
      // One row is always one statement (insert-strategy.ts): nothing written before it to undo.
      return (await this.insertWithRetry([row], tx))[0]!;
    });
  }

  /**
   * Enqueue many jobs (100,000 in a call is fine), all or nothing: either
   * every job is written or, when one is invalid or an insert fails, none is.
   * Up to ENQUEUE_CHUNK_ROWS jobs go in one statement; more go in statements
   * of that size inside one transaction (the caller's `tx`, else one of its
   * own), each chunk validated while the one before it is being inserted.
   * COPY_MIN_ROWS jobs or more without keys, outside a caller's `tx`, are
   * streamed by COPY instead. The choice is made in insert-strategy.ts.
   */
  async enqueueMany(items: readonly EnqueueManyItem[], options: { tx?: Queryable } = {}): Promise<EnqueuedJob[]> {
    if (items.length === 0) return [];
    // One PRODUCER span for the call; every job stores its context (an item's own traceContext only without a span).
    return this.tracing.produce(this.batchSpan(items), items[0]!.traceContext, (traceContext) => this.enqueueManyIn(items, options.tx, traceContext));
  }

  /**
   * What an `enqueueMany` span describes: the first job's queue, kind and
   * tenant (a batch is usually of one kind), and the count. An unknown kind
   * is refused later, by validation, which names the item.
   */
  private batchSpan(items: readonly EnqueueManyItem[]): ProducerInfo {
    const first = items[0]!;
    const definition = typeof first.job === "string" ? this.options.jobs.get(first.job) : first.job;
    return {
      queue: first.queue ?? definition?.queue ?? DEFAULT_QUEUE,
      kind: typeof first.job === "string" ? first.job : first.job.kind,
      tenant: first.tenant ?? DEFAULT_TENANT,
      count: items.length,
    };
  }

  /** `traceContext`: the PRODUCER span's, stored with every job instead of the items' own; undefined without a span. */
  private async enqueueManyIn(items: readonly EnqueueManyItem[], tx: Queryable | undefined, traceContext: string | undefined): Promise<EnqueuedJob[]> {
    switch (chooseInsertStrategy({ rows: items.length, inCallerTransaction: tx !== undefined, keyed: items.some(hasKey) })) {
      case "copy":
        return this.copyIn(items, traceContext);
      case "chunked": {
        const run = (db: Queryable) => this.insertInChunks(items, db, traceContext);
        return tx ? run(tx) : withTransaction(this.options.pool, run);
      }
      case "keyed": {
        const rows = await this.prepareRows(items, 0, items.length, traceContext);
        return withTransaction(this.options.pool, (client) => this.insertWithRetry(rows, client));
      }
      case "statement":
        return this.insertWithRetry(await this.prepareRows(items, 0, items.length, traceContext), tx);
    }
  }

  /** Write a large batch of jobs without keys by COPY, validating each chunk while the server inserts the one before. */
  private async copyIn(items: readonly EnqueueManyItem[], traceContext: string | undefined): Promise<EnqueuedJob[]> {
    const prepare = (from: number) => this.prepareRows(items, from, Math.min(from + COPY_CHUNK_ROWS, items.length), traceContext);
    async function* chunks(): AsyncGenerator<JobInsertRow[]> {
      for (let from = 0; from < items.length; from += COPY_CHUNK_ROWS) yield await prepare(from);
    }
    return (await this.store.jobs.jobCopyMany(chunks())).map(markCreated);
  }

  /**
   * Insert a large batch chunk by chunk on one transaction's connection,
   * validating and encoding each chunk while the previous one is in the
   * database, so the client's work and the server's overlap instead of
   * taking turns.
   */
  private async insertInChunks(items: readonly EnqueueManyItem[], db: Queryable, traceContext: string | undefined): Promise<EnqueuedJob[]> {
    const results: EnqueuedJob[] = [];
    // Settled into a value at once, so a failed insert is never an unhandled
    // rejection while the next chunk is being validated.
    let inFlight: Promise<{ jobs: EnqueuedJob[] } | { error: unknown }> | null = null;
    const collect = async () => {
      const outcome = await inFlight!;
      inFlight = null;
      if ("error" in outcome) throw outcome.error;
      for (const job of outcome.jobs) results.push(job);
    };
    try {
      for (let start = 0; start < items.length; start += ENQUEUE_CHUNK_ROWS) {
        const rows = await this.prepareRows(items, start, Math.min(start + ENQUEUE_CHUNK_ROWS, items.length), traceContext);
        if (inFlight) await collect();
        inFlight = this.insertWithRetry(rows, db).then(
          (jobs) => ({ jobs }),
          (error: unknown) => ({ error }),
        );
      }
      await collect();
      return results;
    } finally {
      // A chunk that failed validation still waits for the insert in flight,
      // so the caller's rollback never races it.
      if (inFlight) await inFlight;
    }
  }

  /** Validate and encode items [from, to), naming a bad one by its index in the whole call; `traceContext`, when given, is stored with each. */
  private async prepareRows(items: readonly EnqueueManyItem[], from: number, to: number, traceContext?: string): Promise<JobInsertRow[]> {
    await this.store.clock.now(); // measured before the first id, then kept fresh in the background
    const rows: JobInsertRow[] = [];
    for (let index = from; index < to; index++) {
      const { job, payload, ...rest } = items[index]!;
      try {
        if ("dependsOn" in rest) {
          throw new ValidationError("dependsOn is not taken by enqueueMany: use enqueue or enqueueFlow", [{ path: "dependsOn", message: "not here" }]);
        }
        const row = await prepareInsert(this.definitionOf(job), payload, rest, this.store.clock.nowKnown());
        if (traceContext !== undefined) row.traceContext = traceContext;
        rows.push(row);
      } catch (error) {
        if (error instanceof ValidationError) {
          throw new ValidationError(`jobs[${index}]: ${error.message}`, error.issues.map((i) => ({ ...i, path: `jobs.${index}.${i.path}` })));
        }
        throw error;
      }
    }
    return rows;
  }

  // An idempotency race that needs another insert can only repeat while the
  // competing transaction keeps rolling back.
  private insertWithRetry(rows: Parameters<typeof insertJobs>[1], db?: Queryable): Promise<EnqueuedJob[]> {
    return withEnqueueRetry(() => insertJobs(this.store.jobs, rows, db));
  }

  /**
   * Enqueue a graph of jobs in one call and one transaction (yours with
   * `tx`), or nothing: each job names what it waits for (`dependsOn`: other
   * jobs of the flow by name, or existing jobs by id) and the policy when one
   * of them ends other than succeeded. Cycles, unknown names and missing or
   * foreign dependencies are refused with a `ValidationError` before anything
   * is written. A job waits (`waiting`) until every dependency has ended;
   * the statement that ends the last one releases it, in the same
   * transaction. 10,000 jobs in one call are fine (at most `MAX_FLOW_JOBS`).
   */
  enqueueFlow(flow: FlowInput): Promise<EnqueuedFlow> {
    return this.graphs.enqueueFlow(flow);
  }

  /**
   * Enqueue a batch: its members, ready at once, and a callback job released
   * exactly once when every member has ended (`callback.when`: `always`,
   * `succeeded` or `failed`; otherwise it is cancelled). The callback's
   * handler reads the counts and failed members with `ctx.dependencySummary()`.
   */
  enqueueBatch(batch: BatchInput): Promise<EnqueuedBatch> {
    return this.graphs.enqueueBatch(batch);
  }

  /** A flow or batch with every job in it and what each depends on; null when there is none (for this tenant). */
  async getFlow(id: string, scope: TenantScope = {}): Promise<FlowDetail | null> {
    checkId(id);
    const flow = await this.reader.flows.flowGet(id, scope.tenant ?? null);
    if (!flow) return null;
    const { requestHash: _hash, ...info } = flow;
    return { ...info, jobs: await this.reader.flows.flowJobList(id) };
  }

  /** Flows and batches, newest first, with cursor pagination. */
  async listFlows(filter: TenantScope & { kind?: "flow" | "batch"; limit?: number; cursor?: string | null } = {}): Promise<Page<FlowInfo>> {
    if (filter.kind !== undefined && filter.kind !== "flow" && filter.kind !== "batch") {
      throw new ValidationError(`kind must be flow or batch; got ${JSON.stringify(filter.kind)}`, [{ path: "kind", message: "flow or batch" }]);
    }
    const limit = checkLimit(filter.limit);
    const rows = await this.reader.flows.flowList({
      tenant: filter.tenant ?? null,
      kind: filter.kind ?? null,
      beforeId: decodeCursor(filter.cursor),
      limit: limit + 1,
    });
    return pageOf(
      rows.map(({ requestHash: _hash, ...info }) => info),
      limit,
    );
  }

  /**
   * Cancel a flow or batch: its jobs that have not started are cancelled at
   * once, running ones are asked to stop as `cancel` does. What waits on a
   * cancelled job follows its policy. Throws NotFoundError when there is no
   * such flow (for this tenant).
   */
  async cancelFlow(id: string, scope: TenantScope = {}): Promise<FlowCancelResult> {
    checkId(id);
    const done = await this.store.flows.flowCancel(id, scope.tenant ?? null);
    if (!done) throw new NotFoundError(`flow ${id} not found`);
    return done;
  }

  /** What a job waits for and what waits for it; null when there is no such job (for this tenant). */
  async getJobDependencies(id: string, scope: TenantScope = {}): Promise<JobDependencies | null> {
    checkId(id);
    if (!(await this.reader.jobs.jobGet(id, scope.tenant ?? null))) return null;
    const [links, state] = await Promise.all([this.reader.flows.jobDependencyLinks(id), this.reader.flows.jobFlowState(id)]);
    const strip = ({ direction: _direction, ...link }: (typeof links)[number]) => link;
    return {
      flowId: state.flowId,
      node: state.node,
      dependencies: links.filter((link) => link.direction === "dependency").map(strip),
      dependents: links.filter((link) => link.direction === "dependent").map(strip),
      counts: state.dependencies && {
        pending: state.dependencies.pending,
        failed: state.dependencies.failed,
        blocking: state.dependencies.blocking,
      },
    };
  }

  /** A job with its executions, or null when it does not exist (or belongs to another tenant). */
  async getJob(id: string, scope: TenantScope = {}): Promise<JobWithExecutions | null> {
    checkId(id);
    const job = await this.reader.jobs.jobGet(id, scope.tenant ?? null);
    if (!job) return null;
    return { ...job, executions: await this.reader.jobs.executionListByJob(id) };
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
    const items = await this.reader.search.jobSearch(values, decodeCursor(cursor), limit + 1, this.options.searchTimeoutMs);
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
    return countJobs(this.reader.search, values, this.options.exactCountLimit, this.options.searchTimeoutMs);
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
    return readOverview(this.reader, scope.tenant ?? null, this.options);
  }

  /**
   * Cancel a job: queued or retrying ones at once; a running one has its
   * handler's signal aborted at the worker's next heartbeat; terminal jobs
   * are left as they are. Throws NotFoundError when there is no such job.
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
    const tenant = scope.tenant ?? null;
    const changed = await this.store.jobs.jobCancel(id, tenant);
    if (changed) return { outcome: changed.status === "running" ? "cancel_requested" : "cancelled", job: changed };
    const job = await this.store.jobs.jobGet(id, tenant);
    if (!job) throw new NotFoundError(`job ${id} not found`);
    return { outcome: "already_terminal", job };
  }

  /** Dead letters, newest first, with cursor pagination. */
  async listDeadLetters(filter: ListDeadLettersFilter = {}): Promise<Page<DeadLetter>> {
    const limit = checkLimit(filter.limit);
    const items = await this.reader.jobs.deadLetterList({
      tenant: filter.tenant,
      kind: filter.kind,
      queue: filter.queue,
      beforeId: decodeCursor(filter.cursor),
      limit: limit + 1,
    });
    return pageOf(items, limit);
  }

  /** A dead letter with its attempt history, or null when it does not exist (or belongs to another tenant). */
  async getDeadLetter(id: string, scope: TenantScope = {}): Promise<DeadLetter | null> {
    checkId(id);
    return this.reader.jobs.deadLetterGet(id, scope.tenant ?? null);
  }

  /** Put a dead-lettered job back in the queue with fresh attempts (same job id). */
  async requeueDeadLetter(id: string, scope: TenantScope = {}): Promise<Job> {
    checkId(id);
    const job = await this.store.jobs.deadLetterRequeue(id, scope.tenant ?? null);
    if (!job) throw new NotFoundError(`dead letter ${id} not found`);
    return job;
  }

  /** Delete a dead-lettered job for good, with its history. */
  async purgeDeadLetter(id: string, scope: TenantScope = {}): Promise<void> {
    checkId(id);
    if (!(await this.store.jobs.deadLetterPurge(id, scope.tenant ?? null))) throw new NotFoundError(`dead letter ${id} not found`);
  }

  /**
   * Delete succeeded and cancelled jobs finished longer ago than `finishedMs`
   * (default 7 days) and dead letters older than `deadLetterMs` (default 30
   * days), with their executions, in batches of `batchSize` rows (default
   * 1,000), each its own short statement. Safe to run from many processes at
   * once: rows another prune holds are skipped, never waited for. Workers do
   * this on their own (worker option `retention`).
   *
   * @example
   * const { jobs, deadLetters } = await conveyor.prune({ finishedMs: 24 * 60 * 60 * 1000 });
   */
  async prune(options: PruneOptions = {}): Promise<PruneResult> {
    return pruneInBatches(this.store.retention, resolvePruneOptions(options), options.signal);
  }

  /**
   * Start a bulk action: retry, cancel, purge, reprioritize or move every
   * job `input.filter` selects, among the states the action applies to
   * (`BULK_ACTION_STATES`). Checked first (a `ValidationError` names the
   * field; nothing is stored), then the jobs are counted (an estimate on
   * large tables) and the operation is stored and returned, `running`.
   * This process then runs it in the background, in batches of
   * `BULK_ACTION_BATCH_SIZE` jobs, each one short transaction, with a pause
   * between them; `close()` stops it between two batches, and any process
   * resumes it (`resumeBulkActions`, `runBulkAction`). The operation is the
   * record: who asked (`requestedBy`), when, with what filter, and how
   * many jobs it touched. `scope.tenant` limits it to that tenant's jobs
   * (a filter naming another tenant is refused); default: every tenant, or
   * the filter's.
   *
   * @example
   * const operation = await conveyor.startBulkAction({ action: "retry", filter: { status: "dead", kind: "email.send" } });
   * const ended = await conveyor.runBulkAction(operation.id, { onProgress: (op) => console.log(op.touched, "of", op.total) });
   */
  startBulkAction(input: BulkActionInput, scope: TenantScope = {}): Promise<BulkAction> {
    return this.bulkActions.start(input, scope.tenant ?? null);
  }

  /** A bulk action; null when there is none (for this tenant: a tenant sees only its own operations). */
  async getBulkAction(id: string, scope: TenantScope = {}): Promise<BulkAction | null> {
    checkId(id);
    return this.store.bulkActions.bulkActionGet(id, scope.tenant ?? null);
  }

  /** Bulk actions, newest first, with cursor pagination. */
  async listBulkActions(filter: ListBulkActionsFilter = {}): Promise<Page<BulkAction>> {
    const limit = checkLimit(filter.limit);
    const rows = await this.store.bulkActions.bulkActionList({ tenant: filter.tenant ?? null, beforeId: decodeCursor(filter.cursor), limit: limit + 1 });
    return pageOf(rows, limit);
  }

  /**
   * Cancel a running bulk action: its walk stops before its next batch and
   * ends `cancelled`, keeping what it did so far (one that no process runs
   * ends at once). Returns the operation. Throws NotFoundError when there
   * is none (for this tenant), ConflictError when it already ended.
   */
  cancelBulkAction(id: string, scope: TenantScope = {}): Promise<BulkAction> {
    checkId(id);
    return this.bulkActions.cancel(id, scope.tenant ?? null);
  }

  /**
   * Run a bulk action to its end in this process and resolve with its
   * final record: the walk this client started, one whose process is gone
   * (taken over from its cursor), or, while another live process runs it,
   * that one's, followed until it ends. Resolves with the record as it is
   * when this client closes first. Throws NotFoundError when there is none.
   */
  async runBulkAction(id: string, options: RunBulkActionOptions = {}): Promise<BulkAction> {
    checkId(id);
    return this.bulkActions.run(id, options);
  }

  /**
   * Take over the running bulk actions whose process is gone (its lease
   * lapsed, or it closed) and run them here in the background, up to
   * `BULK_ACTION_SWEEP_LIMIT` per call; returns them. The HTTP API calls
   * this periodically; safe from any number of processes at once.
   */
  resumeBulkActions(): Promise<BulkAction[]> {
    return this.bulkActions.resume(BULK_ACTION_SWEEP_LIMIT);
  }

  /** Workers that reported in recently, with the jobs each is running. */
  listWorkers(): Promise<WorkerInfo[]> {
    return this.store.jobs.workerList();
  }

  /**
   * Cron schedules as stored (by name), with `nextTickAt`, the first tick not
   * yet enqueued (in the past when no worker has run the schedule since), and
   * `lastTickAt`. A schedule appears once a worker running its kind started.
   */
  listSchedules(scope: TenantScope = {}): Promise<CronScheduleInfo[]> {
    return this.store.cron.cronScheduleList(scope.tenant ?? null);
  }

  /**
   * Pause a queue: no worker claims its jobs (they stay queued) until
   * `resumeQueue`. Claims already running finish normally.
   */
  pauseQueue(queue: string): Promise<QueueSettings> {
    return this.limits.setPaused(queue, true);
  }

  /** Resume a paused queue and wake idle workers at once. */
  resumeQueue(queue: string): Promise<QueueSettings> {
    return this.limits.setPaused(queue, false);
  }

  /**
   * Limit a queue across all workers: `concurrency` caps its jobs running at
   * once; `rateLimit` allows `count` claims per fixed window of `intervalMs`.
   * An omitted field keeps its value; null removes that limit. Default: no limits.
   *
   * @example
   * await conveyor.setQueueLimits("mail", { concurrency: 3, rateLimit: { count: 100, intervalMs: 60_000 } });
   */
  setQueueLimits(queue: string, limits: QueueLimitsInput): Promise<QueueSettings> {
    return this.limits.setQueueLimits(queue, limits);
  }

  /**
   * Delete a queue's settings, as if it had never been configured: it is
   * resumed, its limits are lifted and idle workers are woken. Its jobs are
   * untouched. Pausing or limiting a queue creates its settings, whether or
   * not it has jobs yet (so a queue can be set up before its first job);
   * this is how settings made for a queue no longer used, or a mistyped
   * name, are removed. Throws a NotFoundError when the queue has no settings.
   *
   * @example
   * await conveyor.deleteQueueSettings("mial"); // undo `pauseQueue("mial")`
   */
  deleteQueueSettings(queue: string): Promise<void> {
    return this.limits.deleteQueueSettings(queue);
  }

  /** Every queue with settings (paused, limits). Queues never configured are unlimited and not listed. */
  listQueueSettings(): Promise<QueueSettings[]> {
    return this.limits.listQueueSettings();
  }

  /** Cap one tenant's jobs running at once across all workers; null removes the cap. Default: no cap. */
  setTenantLimits(tenant: string, limits: { concurrency: number | null }): Promise<TenantSettings> {
    return this.limits.setTenantLimits(tenant, limits);
  }

  /** Every tenant with a setting. */
  listTenantSettings(): Promise<TenantSettings[]> {
    return this.limits.listTenantSettings();
  }

  /**
   * Limit each key of a queue (jobs carry their key: `limitKey` at enqueue,
   * or the definition's `limitKey(payload)`): `concurrency` caps one key's
   * jobs running at once across all workers; `rateLimit` allows `count`
   * starts per key per fixed window of `intervalMs`; `throttleMs` allows one.
   * Without `options.key` this sets the queue's default for every key; with
   * it, that key's override (which replaces the default for the key). An
   * omitted field keeps its value; null removes that limit. Takes effect at
   * the workers' next claim. Default: no key limits. A queue with queue
   * limits (`setQueueLimits`) is refused (ConflictError).
   *
   * @example
   * await conveyor.setKeyLimits("webhooks", { concurrency: 5, rateLimit: { count: 100, intervalMs: 60_000 } });
   * await conveyor.setKeyLimits("webhooks", { concurrency: 1, throttleMs: 1_000 }, { key: "slow.example.com" });
   */
  setKeyLimits(queue: string, limits: KeyLimitsInput, options: { key?: string } = {}): Promise<KeyLimitSettings> {
    return this.keyLimits.setKeyLimits(queue, limits, options.key ?? null);
  }

  /**
   * Delete one key's override (`options.key`), or every key limit of the
   * queue (no key: its jobs are claimed without key limits again). Throws a
   * NotFoundError when there was nothing to delete.
   */
  deleteKeyLimits(queue: string, options: { key?: string } = {}): Promise<void> {
    return this.keyLimits.deleteKeyLimits(queue, options.key ?? null);
  }

  /** The key limits of one queue (default: every queue): each queue's default (`key` null) first, then its overrides. */
  listKeyLimits(queue?: string): Promise<KeyLimitSettings[]> {
    return this.keyLimits.listKeyLimits(queue ?? null);
  }

  /**
   * What one key of a queue is doing, and why its waiting jobs are not
   * running: paused queue, concurrency limit, rate window full, or nothing.
   *
   * @example
   * const { state, reason } = await conveyor.keyStatus("webhooks", "api.example.com");
   */
  keyStatus(queue: string, key: string): Promise<KeyStatus> {
    return this.keyLimits.keyStatus(queue, key);
  }

  /** The keys of a queue with the most jobs waiting, with their running jobs and limits; `limit` 1..`MAX_TOP_KEYS` (default `DEFAULT_TOP_KEYS`, 10). */
  topKeys(queue: string, limit?: number): Promise<KeyLoad[]> {
    return this.keyLimits.topKeys(queue, limit);
  }

  /**
   * Send the wake-ups of jobs already enqueued, then close the pool if
   * Conveyor created it. Resolves within `SHUTDOWN_CLEANUP_MS` whatever the
   * network does (connections it could not close are left to the OS).
   */
  async close(): Promise<void> {
    const closing = (async () => {
      // Bulk actions stop between batches and are let go of, for another process to resume.
      await this.bulkActions.close();
      // Wake-ups of jobs already enqueued go out first: a short-lived process
      // (a script, `conveyor enqueue`) must not leave its jobs to the next poll.
      await this.store.jobs.drainWakeUps();
      if (this.options.ownsPool) await this.options.pool.end();
      if (this.reader !== this.store) await this.reader.pool.end();
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

function checkId(id: string): void {
  if (typeof id !== "string" || !isUuid(id)) throw new ValidationError(`id must be a UUID, got ${JSON.stringify(id)}`, [{ path: "id", message: "must be a UUID" }]);
}

function checkLimit(limit: number | undefined): number {
  const value = limit ?? DEFAULT_LIST_LIMIT;
  if (!Number.isInteger(value) || value < 1 || value > MAX_LIST_LIMIT) {
    throw new ValidationError(`limit must be an integer from 1 to ${MAX_LIST_LIMIT}, got ${String(limit)}`, [{ path: "limit", message: "out of range" }]);
  }
  return value;
}

function pageOf<T extends { id: string }>(rows: T[], limit: number): Page<T> {
  const items = rows.slice(0, limit);
  return { items, nextCursor: rows.length > limit ? encodeCursor(items.at(-1)!.id) : null };
}

/** An item that COPY cannot write: its key may answer with an existing job. */
function hasKey(item: EnqueueManyItem): boolean {
  return item.idempotencyKey != null || item.unique != null;
}
