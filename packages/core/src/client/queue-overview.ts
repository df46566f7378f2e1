import { JOB_STATUSES } from "../core/states.js";
import type { KeyHeldBack } from "../core/key-limits.js";
import type { WorkerInfo } from "../core/model.js";
import type { KeyLimitStore } from "../store/key-limit-store.js";
import type { RateLimit } from "../core/queue-settings.js";
import type { FlowStore } from "../store/flow-store.js";
import type { QueueSettingsStore } from "../store/queue-settings-store.js";
import type { QueueStats, StatusCounts } from "../core/overview.js";
import type { QueueStore } from "../store/queue-store.js";
import type { StepStore } from "../store/step-store.js";
import { OPEN_WAITS_COUNT_LIMIT } from "../core/defaults.js";
import type { Store } from "../store/store.js";
import { scopeTenant, type TenantScope } from "./scope.js";
import type { ResolvedConveyorOptions } from "./options.js";
import { NONE_ESTIMATED, queueCountLimits, readQueueCounts, readReadyAges } from "./counts.js";
import { SearchTimeoutError } from "../core/errors.js";

export type { QueueStats } from "../core/overview.js";

/** The states the depth gauge reports: unfinished and dead jobs (succeeded and cancelled ones are history). */
const DEPTH_STATES = JOB_STATUSES.filter((status) => status !== "succeeded" && status !== "cancelled");

const NONE = Object.fromEntries(JOB_STATUSES.map((status) => [status, 0])) as StatusCounts;

/** A queue's counts with what is set on it (pause, limits). */
export interface QueueOverviewItem extends QueueStats {
  /** Paused queues are not claimed. Default false. */
  paused: boolean;
  /** Most running at once across all workers; null: no cap. */
  concurrency: number | null;
  /** null: no rate limit. */
  rateLimit: RateLimit | null;
  /** The queue's default limits per key; null when it has no limits per key. */
  keyLimits: {
    /** Most of one key's jobs running at once; null: no cap. */
    concurrency: number | null;
    /** Starts per key per window; null: no rate limit. */
    rateLimit: RateLimit | null;
  } | null;
}

/**
 * Read-only views for operators and the HTTP API (`conveyor.queueOverview`):
 * per-queue counts, queue depth for metrics, and workers with their
 * running jobs, each optionally limited to one tenant.
 */
export class QueueOverview {
  private readonly store: QueueStore;
  private readonly steps: StepStore;
  private readonly settings: QueueSettingsStore;
  private readonly flows: FlowStore;
  private readonly keyLimits: KeyLimitStore;
  private readonly limits: Pick<ResolvedConveyorOptions, "exactCountLimit" | "searchTimeoutMs">;

  /**
   * @internal Made by the client. Overviews only read: `reader` is the read
   * replica's store when the client has one.
   */
  constructor(reader: Store, limits: Pick<ResolvedConveyorOptions, "exactCountLimit" | "searchTimeoutMs">) {
    this.limits = limits;
    this.steps = reader.steps;
    this.store = reader.queues;
    this.settings = reader.queueSettings;
    this.flows = reader.flows;
    this.keyLimits = reader.keyLimits;
  }

  /** Durable jobs' waits for an event still open, all tenants, counted up to `OPEN_WAITS_COUNT_LIMIT` (100,000): for a metrics gauge. */
  openWaits(): Promise<number> {
    return this.steps.waitsOpenCount(OPEN_WAITS_COUNT_LIMIT);
  }

  /** Keys held back by their limits now (at their concurrency cap or with a full rate window), with their ready jobs: for metrics. */
  keysHeldBack(): Promise<KeyHeldBack[]> {
    return this.keyLimits.keyHeldBackList();
  }

  /**
   * Jobs by status per queue, the age of each queue's oldest ready job, and
   * its settings. Counts are exact up to `QUEUE_EXACT_COUNT_LIMIT` (1,000)
   * jobs of a queue in a state (or the client's `exactCountLimit` when
   * lower) and the planner's estimates only beyond; a state with no jobs
   * is 0, never estimated; `estimated` says which. Across all tenants, queues
   * that have settings or key limits but no jobs are listed too; a tenant
   * scope lists only queues holding its jobs. `oldestReadyAgeMs` is null
   * when none waits, or when it could not be read within `searchTimeoutMs`.
   */
  async queueStats(scope: TenantScope = {}): Promise<QueueOverviewItem[]> {
    const tenant = scopeTenant(scope);
    const limits = queueCountLimits(this.limits);
    const [counts, ages, settings, keyLimits] = await Promise.all([
      readQueueCounts(this.store, tenant, limits),
      readReadyAges(this.store, tenant, limits.perQueue, limits.timeoutMs).catch((error: unknown) => {
        if (error instanceof SearchTimeoutError) return null;
        throw error;
      }),
      this.settings.queueSettingsList(),
      this.keyLimits.keyLimitsList(null),
    ]);
    const stats: QueueStats[] = counts.map((queue) => ({ ...queue, oldestReadyAgeMs: ages?.byQueue.get(queue.queue)?.ageMs ?? null }));
    const byName = new Map(settings.map((s) => [s.queue, s]));
    const keyDefaults = new Map(
      keyLimits.filter((k) => k.key === null).map((k) => [k.queue, { concurrency: k.concurrency, rateLimit: k.rateLimit }]),
    );
    const items: QueueOverviewItem[] = stats.map((queue) => {
      const set = byName.get(queue.queue);
      return {
        ...queue,
        paused: set?.paused ?? false,
        concurrency: set?.concurrency ?? null,
        rateLimit: set?.rateLimit ?? null,
        keyLimits: keyDefaults.get(queue.queue) ?? null,
      };
    });
    if (tenant === null) {
      const listed = new Set(stats.map((queue) => queue.queue));
      for (const set of settings) {
        if (listed.has(set.queue)) continue;
        items.push({
          queue: set.queue,
          counts: { ...NONE },
          estimated: { ...NONE_ESTIMATED },
          oldestReadyAgeMs: null,
          paused: set.paused,
          concurrency: set.concurrency,
          rateLimit: set.rateLimit,
          keyLimits: keyDefaults.get(set.queue) ?? null,
        });
        listed.add(set.queue);
      }
      for (const [queue, limits] of keyDefaults) {
        if (listed.has(queue)) continue;
        items.push({
          queue,
          counts: { ...NONE },
          estimated: { ...NONE_ESTIMATED },
          oldestReadyAgeMs: null,
          paused: false,
          concurrency: null,
          rateLimit: null,
          keyLimits: limits,
        });
      }
      items.sort((a, b) => (a.queue < b.queue ? -1 : a.queue > b.queue ? 1 : 0));
    }
    return items;
  }

  /**
   * Unfinished and dead jobs by queue and status, across tenants (for a
   * metrics gauge), counted as `queueStats` counts them: exact up to the
   * per-queue limit, the planner's estimate beyond it (`estimated`). Never
   * a count of the whole table.
   */
  async queueDepth(): Promise<
    Array<{
      /** The queue. */
      queue: string;
      /** One of waiting, queued, running, retrying, sleeping, dead: every state but succeeded and cancelled. */
      status: string;
      /** How many jobs (see `estimated`). */
      count: number;
      /** True when `count` is the planner's estimate. */
      estimated: boolean;
    }>
  > {
    const counts = await readQueueCounts(this.store, null, queueCountLimits(this.limits));
    return counts.flatMap((queue) =>
      DEPTH_STATES.map((status) => ({
        queue: queue.queue,
        status,
        count: queue.counts[status],
        estimated: queue.estimated[status],
      })),
    );
  }

  /**
   * Batch callbacks across tenants by whether they still wait: `waiting`,
   * `released` (queued, running or ran) or `skipped` (ended without
   * running: a member's failure under `when`, or a cancel). For a metrics gauge.
   */
  flowCallbackStates(): Promise<Record<"waiting" | "skipped" | "released", number>> {
    return this.flows.flowCallbackStates();
  }

  /** Live workers; with a tenant scope, each lists only that tenant's running jobs. */
  async listWorkers(scope: TenantScope = {}): Promise<WorkerInfo[]> {
    return this.store.workerListWithJobs(scopeTenant(scope));
  }
}
