import type { WorkerInfo } from "../core/model.js";
import { QueueStore, type QueueStats } from "../store/queue-store.js";
import type { Conveyor, TenantScope } from "./conveyor.js";

export type { QueueStats } from "../store/queue-store.js";

/**
 * Read-only views for operators and the HTTP API: per-queue counts, queue
 * depth for metrics, and workers with their running jobs, each optionally
 * limited to one tenant.
 */
export class QueueOverview {
  private readonly store: QueueStore;

  constructor(conveyor: Conveyor) {
    this.store = new QueueStore(conveyor.pool, conveyor.options.schema);
  }

  /** Jobs by status per queue, and the age of each queue's oldest ready job. */
  queueStats(scope: TenantScope = {}): Promise<QueueStats[]> {
    return this.store.queueStats(scope.tenant ?? null);
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
