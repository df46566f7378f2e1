import type { WorkerInfo } from "../core/model.js";
import type { JobStatus } from "../core/states.js";
import type { Queryable } from "./db.js";
import { runQuery } from "./run-query.js";
import type { Queries } from "./queries.js";
import { rowToWorker } from "./rows.js";

/** One queue's jobs by status, and how long its oldest ready job has waited. */
export interface QueueStats {
  queue: string;
  counts: Record<JobStatus, number>;
  /** Milliseconds since the oldest job ready to run became ready; null when none is waiting. */
  oldestReadyAgeMs: number | null;
}

/** Read-only overviews of queues and workers (statements in `sql/queues.ts` and `sql/workers.ts`). */
export class QueueStore {
  private readonly pool: Queryable;
  private readonly q: Queries;

  constructor(pool: Queryable, queries: Queries) {
    this.pool = pool;
    this.q = queries;
  }

  /** Per-queue statistics; `tenant` null counts every tenant. */
  async queueStats(tenant: string | null): Promise<QueueStats[]> {
    const { rows } = await runQuery(this.pool, this.q.queueStats, [tenant]);
    return rows.map((row) => ({
      queue: row.queue,
      counts: {
        waiting: row.waiting,
        queued: row.queued,
        running: row.running,
        retrying: row.retrying,
        succeeded: row.succeeded,
        cancelled: row.cancelled,
        dead: row.dead,
      },
      oldestReadyAgeMs: row.oldest_ready_age_ms === null ? null : Math.max(0, Math.round(row.oldest_ready_age_ms)),
    }));
  }

  /** Unfinished jobs by queue and status, plus dead-lettered ones (as status `dead`). */
  async queueDepth(): Promise<Array<{ queue: string; status: string; count: number }>> {
    const { rows } = await runQuery(this.pool, this.q.queueDepth, []);
    return rows.map((row) => ({ queue: row.queue, status: row.status, count: row.count }));
  }

  /** Live workers; `runningJobIds` limited to `tenant`'s jobs unless it is null. */
  async workerListWithJobs(tenant: string | null): Promise<WorkerInfo[]> {
    const { rows } = await runQuery(this.pool, this.q.workerListWithJobs, [tenant]);
    return rows.map(rowToWorker);
  }
}
