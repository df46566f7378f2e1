import { ApiKeyStore } from "./api-key-store.js";
import { BulkActionStore } from "./bulk-action-store.js";
import { ClaimStore } from "./claim-store.js";
import { CronStore } from "./cron-store.js";
import { DatabaseClock } from "./database-clock.js";
import { DeadLetterStore } from "./dead-letter-store.js";
import type { ConnectionConfig, Pool } from "./db.js";
import { FlowStore } from "./flow-store.js";
import { HandlerStore } from "./handler-store.js";
import { JobSearchStore } from "./job-search-store.js";
import { JobStore } from "./job-store.js";
import { KeyLimitStore } from "./key-limit-store.js";
import { LimitedClaimStore } from "./limited-claim-store.js";
import { bindQueries, type Queries } from "./queries.js";
import { QueueSettingsStore } from "./queue-settings-store.js";
import { QueueStore } from "./queue-store.js";
import { RetentionStore } from "./retention-store.js";
import { StatsStore } from "./stats-store.js";
import { StepStore } from "./step-store.js";
import { tenantIndexEnsure } from "./tenant-index-store.js";
import { WorkerStore } from "./worker-store.js";

/**
 * Conveyor's one database boundary: the pool, the schema and every statement
 * bound for it once (queries.ts), and the stores of each entity built once
 * from them. A client makes one Store and everything it serves (its worker,
 * HTTP app and CLI) goes through it, so the statements are bound once per
 * client and the wake-ups of every insert share one waker (JobStore).
 *
 * Each group's methods are named entity first (`jobs.jobInsert`,
 * `cron.cronScheduleList`, `queueSettings.queueSettingsSetLimits`,
 * `apiKeys.apiKeyInsert`, `stats.statsThroughputByMinute`, `search.jobCount`,
 * `bulkActions.bulkActionBatch`).
 */
export class Store {
  /** Every statement with the schema substituted, bound once here. */
  readonly queries: Queries;
  /** Jobs and their executions: inserts, claims, attempts, cancels, reclaims. */
  readonly jobs: JobStore;
  /** The dead-letter queue. */
  readonly deadLetters: DeadLetterStore;
  /** Live workers' registrations. */
  readonly workers: WorkerStore;
  /** Searches and counts of jobs by a filter, under a time bound. */
  readonly search: JobSearchStore;
  /** The database server's clock, which execution ids and cron ticks are made from. */
  readonly clock: DatabaseClock;
  /** Cron schedules and their ticks. */
  readonly cron: CronStore;
  /** Dependencies, flows and batches. */
  readonly flows: FlowStore;
  /** What a running handler writes: progress and transactional completion. */
  readonly handlers: HandlerStore;
  /** Read-only overviews of queues. */
  readonly queues: QueueStore;
  /** Queue and tenant limits. */
  readonly queueSettings: QueueSettingsStore;
  /** Limits per key: defaults, overrides, what a key is doing. */
  readonly keyLimits: KeyLimitStore;
  /** Claims from limited queues and fair claims across tenants (on the pool). */
  readonly limitedClaims: LimitedClaimStore;
  /** Retention deletes. */
  readonly retention: RetentionStore;
  /** Activity over time. */
  readonly stats: StatsStore;
  /** API keys. */
  readonly apiKeys: ApiKeyStore;
  /** Bulk actions: their operations and batches. */
  readonly bulkActions: BulkActionStore;
  /** Durable execution: steps, sleeps, waits and events. */
  readonly steps: StepStore;

  constructor(
    /** The client's pool, on which every group runs. */
    readonly pool: Pool,
    /** Schema holding Conveyor's tables. */
    readonly schema: string,
    /** Connections go through a pooler in transaction mode: nothing is prepared, no session is relied on. */
    readonly pooled = false,
  ) {
    const queries = bindQueries(schema, pooled);
    this.queries = queries;
    this.jobs = new JobStore(pool, queries, schema);
    this.deadLetters = new DeadLetterStore(pool, queries);
    this.workers = new WorkerStore(pool, queries);
    this.search = new JobSearchStore(pool, schema, this.jobs);
    this.clock = new DatabaseClock(pool, queries);
    this.cron = new CronStore(pool, queries);
    this.flows = new FlowStore(pool, queries);
    this.handlers = new HandlerStore(pool, queries, schema);
    this.queues = new QueueStore(pool, queries, schema);
    this.queueSettings = new QueueSettingsStore(pool, queries, schema);
    this.keyLimits = new KeyLimitStore(pool, queries, schema);
    this.limitedClaims = new LimitedClaimStore(pool, queries, this.clock);
    this.retention = new RetentionStore(pool, queries);
    this.stats = new StatsStore(pool, queries);
    this.apiKeys = new ApiKeyStore(pool, queries);
    this.bulkActions = new BulkActionStore(pool, queries, schema);
    this.steps = new StepStore(pool, queries);
  }

  /**
   * A worker's claims, on a connection of its own made as `connection` says
   * (claim-store.ts), from this store's statements. `queues`: the worker's,
   * null for every queue. Close it when the worker stops.
   */
  claimStoreOpen(connection: ConnectionConfig, queues: readonly string[] | null): ClaimStore {
    return new ClaimStore(connection, this.queries, queues, this.clock, this.pooled);
  }

  /** Make sure the tenant-fair claim's index exists; true when this call built it (tenant-index-store.ts). */
  tenantIndexEnsure(): Promise<boolean> {
    return tenantIndexEnsure(this.pool, this.queries, this.schema);
  }
}
