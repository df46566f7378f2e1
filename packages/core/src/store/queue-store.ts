import type { WorkerInfo } from "../core/model.js";
import { JOB_STATUSES, type JobStatus } from "../core/states.js";
import { boundedRead } from "./bounded-read.js";
import type { Pool } from "./db.js";
import { runQuery } from "./run-query.js";
import type { Queries } from "./queries.js";
import { rowToWorker } from "./rows.js";

/** One state of a queue as read: the rows counted (up to the limit), and the planner's estimate when the limit was reached. */
export interface StateRead {
  counted: number;
  /** The planner's estimate; null when fewer rows than the limit were counted. */
  estimate: number | null;
}

/** What queueCounts read of one queue. */
export interface QueueCountRow {
  queue: string;
  /** The statistics name this queue for the tenant (always false for all tenants). */
  inStatistics: boolean;
  reads: Record<JobStatus, StateRead>;
}

/** The first ready job of one queue and priority whose run time has come. */
export interface ReadyHead {
  queue: string;
  id: string;
  kind: string;
  tenant: string;
  ageMs: number;
}

/** Running jobs past their lease: how many (up to the limit) and the first ones. */
export interface LeaseExpired {
  count: number;
  jobs: Array<{ id: string; queue: string; kind: string; tenant: string; workerId: string; expiredMs: number }>;
}

const int = (value: unknown): number => Number(value ?? 0);

/**
 * Read-only overviews of queues and workers (statements in `sql/queues.ts`
 * and `sql/workers.ts`). The reads that could grow with the table run in
 * a transaction of their own under `timeoutMs` (bounded-read.ts).
 */
export class QueueStore {
  private readonly pool: Pool;
  private readonly q: Queries;
  private readonly schema: string;

  constructor(pool: Pool, queries: Queries, schema: string) {
    this.pool = pool;
    this.q = queries;
    this.schema = schema;
  }

  /** Per queue and state: jobs counted reading at most `readLimit` index entries, the planner's estimate where that was not enough; `tenant` null for every tenant. */
  async queueCounts(tenant: string | null, readLimit: number, timeoutMs: number): Promise<QueueCountRow[]> {
    // Through indexes: each state's partition is probed by queue, and the
    // planner would read a small partition whole, for every queue.
    const { rows } = await boundedRead(this.pool, timeoutMs, (db) => runQuery(db, this.q.queueCounts, [tenant, readLimit, this.schema]), {
      throughIndexes: true,
    });
    return rows.map((row) => ({
      queue: row.queue,
      inStatistics: row.in_statistics,
      reads: Object.fromEntries(
        JOB_STATUSES.map((status) => {
          const estimate = row[`${status}_estimate`];
          return [status, { counted: int(row[status]), estimate: estimate === null ? null : int(estimate) }];
        }),
      ) as Record<JobStatus, StateRead>,
    }));
  }

  /** Per queue, every state counted exactly, when the jobs table holds at most `tableLimit` rows; else null (and only that many rows were read). */
  async queueCountsSmall(tenant: string | null, tableLimit: number, timeoutMs: number): Promise<Array<{ queue: string; counts: Record<JobStatus, number> }> | null> {
    const { rows } = await boundedRead(this.pool, timeoutMs, (db) => runQuery(db, this.q.queueCountsSmall, [tenant, tableLimit]));
    if (!rows[0]?.small) return null;
    return rows
      .filter((row) => row.queue !== null)
      .map((row) => ({
        queue: row.queue,
        counts: Object.fromEntries(JOB_STATUSES.map((status) => [status, row[status]])) as Record<JobStatus, number>,
      }));
  }

  /**
   * Per queue: the planner's estimate of every state, 0 for a state with no
   * jobs; the ready states counted exactly (`readyExact`) when the queue
   * has at most `readLimit` - 1 ready jobs. For all tenants, or the queues
   * the statistics name for `tenant`.
   */
  async queueEstimates(
    tenant: string | null,
    readLimit: number,
    timeoutMs: number,
  ): Promise<Array<{ queue: string; readyExact: boolean; counts: Record<JobStatus, number> }>> {
    // Through indexes, as queueCounts.
    const { rows } = await boundedRead(this.pool, timeoutMs, (db) => runQuery(db, this.q.queueEstimates, [tenant, this.schema, readLimit]), {
      throughIndexes: true,
    });
    return rows.map((row) => ({
      queue: row.queue,
      readyExact: row.ready_exact === true,
      counts: Object.fromEntries(JOB_STATUSES.map((status) => [status, int(row[`${status}_estimate`])])) as Record<JobStatus, number>,
    }));
  }

  /** The first ready job of each queue and priority (for a tenant: among each group's first `readLimit`), whose run time has come. */
  async queueReadyHeads(tenant: string | null, readLimit: number, timeoutMs: number): Promise<ReadyHead[]> {
    const { rows } = await boundedRead(this.pool, timeoutMs, (db) => runQuery(db, this.q.queueReadyHeads, [tenant, readLimit]));
    return rows.map((row) => ({ queue: row.queue, id: row.id, kind: row.kind, tenant: row.tenant, ageMs: Math.max(0, Math.round(row.age_ms)) }));
  }

  /** Running jobs whose lease expired: counted up to `countLimit`, the `listLimit` longest expired listed. */
  async jobLeaseExpiredList(tenant: string | null, countLimit: number, listLimit: number, timeoutMs: number): Promise<LeaseExpired> {
    const { rows } = await boundedRead(this.pool, timeoutMs, (db) => runQuery(db, this.q.jobLeaseExpiredList, [tenant, countLimit, listLimit]));
    return {
      count: int(rows[0]?.count),
      jobs: rows
        .filter((row) => row.id !== null)
        .map((row) => ({
          id: row.id,
          queue: row.queue,
          kind: row.kind,
          tenant: row.tenant,
          workerId: row.locked_by,
          expiredMs: Math.max(0, Math.round(row.expired_ms)),
        })),
    };
  }

  /** Live workers; `runningJobIds` limited to `tenant`'s jobs unless it is null. */
  async workerListWithJobs(tenant: string | null): Promise<WorkerInfo[]> {
    const { rows } = await runQuery(this.pool, this.q.workerListWithJobs, [tenant]);
    return rows.map(rowToWorker);
  }
}
