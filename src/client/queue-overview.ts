import type { WorkerInfo } from "../core/model.js";
import type { RateLimit } from "../core/queue-settings.js";
import type { QueueSettingsStore } from "../store/queue-settings-store.js";
import type { QueueStats, QueueStore } from "../store/queue-store.js";
import { clientInternals, type ConveyorClient, type TenantScope } from "./conveyor-client.js";

export type { QueueStats } from "../store/queue-store.js";

/** A queue's counts with what is set on it (pause, limits). */
export interface QueueOverviewItem extends QueueStats {
  /** Paused queues are not claimed. Default false. */
  paused: boolean;
  /** Most running at once across all workers; null: no cap. */
  concurrencyLimit: number | null;
  /** null: no rate limit. */
  rateLimit: RateLimit | null;
}

/**
 * Read-only views for operators and the HTTP API: per-queue counts, queue
 * depth for metrics, and workers with their running jobs, each optionally
 * limited to one tenant.
 */
export class QueueOverview {
  private readonly store: QueueStore;
  private readonly settings: QueueSettingsStore;

  constructor(conveyor: ConveyorClient) {
    const { store } = clientInternals(conveyor);
    this.store = store.queues;
    this.settings = store.queueSettings;
  }

  /**
   * Jobs by status per queue, the age of each queue's oldest ready job, and
   * its settings. Across all tenants, queues that have settings but no jobs
   * are listed too; a tenant scope lists only queues holding its jobs.
   */
  async queueStats(scope: TenantScope = {}): Promise<QueueOverviewItem[]> {
    const tenant = scope.tenant ?? null;
    const [stats, settings] = await Promise.all([this.store.queueStats(tenant), this.settings.queueSettingsList()]);
    const byName = new Map(settings.map((s) => [s.queue, s]));
    const items: QueueOverviewItem[] = stats.map((queue) => {
      const set = byName.get(queue.queue);
      return { ...queue, paused: set?.paused ?? false, concurrencyLimit: set?.concurrency ?? null, rateLimit: set?.rateLimit ?? null };
    });
    if (tenant === null) {
      const listed = new Set(stats.map((queue) => queue.queue));
      for (const set of settings) {
        if (listed.has(set.queue)) continue;
        items.push({
          queue: set.queue,
          counts: { queued: 0, running: 0, retrying: 0, succeeded: 0, cancelled: 0, dead: 0 },
          oldestReadyAgeMs: null,
          paused: set.paused,
          concurrencyLimit: set.concurrency,
          rateLimit: set.rateLimit,
        });
      }
      items.sort((a, b) => (a.queue < b.queue ? -1 : a.queue > b.queue ? 1 : 0));
    }
    return items;
  }

  /** Unfinished and dead-lettered jobs by queue and status, across tenants (for a metrics gauge). */
  queueDepth(): Promise<Array<{ queue: string; status: string; count: number }>> {
    return this.store.queueDepth();
  }

  /** Live workers; with a tenant scope, each lists only that tenant's running jobs. */
  listWorkers(scope: TenantScope = {}): Promise<WorkerInfo[]> {
    return this.store.workerListWithJobs(scope.tenant ?? null);
  }
}
