import { QUEUE_EXACT_COUNT_LIMIT } from "../core/defaults.js";
import { SearchTimeoutError } from "../core/errors.js";
import type { JobCount, OldestReadyJob, QueueStats, StatusCounts, StatusEstimated } from "../core/overview.js";
import { JOB_STATUSES, READY_STATUSES } from "../core/states.js";
import type { JobSearchStore } from "../store/job-search-store.js";
import type { QueueCountRow, QueueStore, ReadyHead } from "../store/queue-store.js";
import type { JobFilterValues } from "../store/sql/job-filter.js";

// Counts that never read the table through: exact up to a limit, the
// planner's estimate beyond it (or when counting hits the time bound),
// and flagged so. Shared by countJobs, the queue statistics, the overview
// and the queue-depth gauge, so that each says the same of the same jobs.

/** The per-queue exact-count limit for a client whose `countJobs` limit is `exactCountLimit`. */
export function queueExactLimit(exactCountLimit: number): number {
  return Math.min(exactCountLimit, QUEUE_EXACT_COUNT_LIMIT);
}

/**
 * How many jobs match `filter`: counted one by one up to `limit`; above
 * it, or when counting did not finish within `timeoutMs`, the planner's
 * estimate (never below what was counted).
 */
export async function countJobs(search: JobSearchStore, filter: JobFilterValues, limit: number, timeoutMs: number): Promise<JobCount> {
  let counted = 0;
  try {
    counted = await search.jobCount(filter, limit + 1, timeoutMs);
    if (counted <= limit) return { count: counted, estimated: false };
  } catch (error) {
    if (!(error instanceof SearchTimeoutError)) throw error;
  }
  return { count: Math.max(await search.jobEstimate(filter, timeoutMs), counted), estimated: true };
}

/** A queue's jobs by state, without the age of its oldest ready job. */
export type QueueCounts = Omit<QueueStats, "oldestReadyAgeMs">;

/** No count estimated: every state counted exactly. */
export const NONE_ESTIMATED = Object.fromEntries(JOB_STATUSES.map((status) => [status, false])) as StatusEstimated;

/** How per-queue counts are read: see readQueueCounts. */
export interface QueueCountLimits {
  /** Jobs of one queue in one state counted one by one at most. */
  perQueue: number;
  /** A jobs table of at most this many rows is counted through, exactly. */
  table: number;
  /** The time bound of each statement. */
  timeoutMs: number;
}

/** The per-queue count limits of a client with these options. */
export function queueCountLimits(options: { exactCountLimit: number; searchTimeoutMs: number }): QueueCountLimits {
  return { perQueue: queueExactLimit(options.exactCountLimit), table: options.exactCountLimit, timeoutMs: options.searchTimeoutMs };
}

/**
 * Per queue, its jobs by state (for `tenant`, or all when null), by name.
 * A jobs table of at most `limits.table` rows is counted through, every
 * state exactly. A larger one: every state of every queue is counted
 * through an index reading at most `limits.perQueue` + 1 rows, exactly
 * when it holds at most `limits.perQueue`; only a state with more is the
 * planner's estimate, never below what was counted. When counting does
 * not finish within the time bound, every state is estimated, except that
 * a state with no jobs is 0, and a queue's ready states are counted
 * exactly when it has at most `limits.perQueue` ready jobs (otherwise a
 * ready state too rare to be seen is an estimated 0). So no count shown
 * is one the exact count would deny: a state the store has no job in is
 * never shown above 0.
 * For a tenant, only queues where it has jobs counted, or that the
 * statistics name for it, are listed.
 */
export async function readQueueCounts(store: QueueStore, tenant: string | null, limits: QueueCountLimits): Promise<QueueCounts[]> {
  const { perQueue: limit, timeoutMs } = limits;
  let rows: QueueCountRow[];
  try {
    const small = await store.queueCountsSmall(tenant, limits.table, timeoutMs);
    if (small !== null) return small.map(({ queue, counts }) => ({ queue, counts, estimated: { ...NONE_ESTIMATED } }));
    rows = await store.queueCounts(tenant, limit + 1, timeoutMs);
  } catch (error) {
    if (!(error instanceof SearchTimeoutError)) throw error;
    const estimates = await store.queueEstimates(tenant, limit + 1, timeoutMs);
    return estimates.map(({ queue, readyExact, counts }) => ({
      queue,
      counts,
      estimated: Object.fromEntries(
        JOB_STATUSES.map((status) => [status, READY_STATUSES.includes(status) ? !readyExact : counts[status] > 0]),
      ) as StatusEstimated,
    }));
  }
  const items: QueueCounts[] = [];
  for (const row of rows) {
    const counts = {} as StatusCounts;
    const estimated = { ...NONE_ESTIMATED };
    let counted = 0;
    for (const status of JOB_STATUSES) {
      const { counted: read, estimate } = row.reads[status];
      const exact = read <= limit || estimate === null;
      counts[status] = exact ? read : Math.max(estimate, read);
      estimated[status] = !exact;
      counted += read;
    }
    if (tenant !== null && counted === 0 && !row.inStatistics) continue;
    items.push({ queue: row.queue, counts, estimated });
  }
  return items;
}

/** Each queue's oldest ready job (its age is the queue's oldest wait), and the oldest ready job of all. */
export interface ReadyAges {
  byQueue: Map<string, OldestReadyJob>;
  oldest: OldestReadyJob | null;
}

/**
 * The oldest ready job of every queue (for `tenant`: among each queue and
 * priority's first `limit` ready jobs), from one index probe per queue and
 * priority. Throws SearchTimeoutError when that did not finish within
 * `timeoutMs`.
 */
export async function readReadyAges(store: QueueStore, tenant: string | null, limit: number, timeoutMs: number): Promise<ReadyAges> {
  const heads: ReadyHead[] = await store.queueReadyHeads(tenant, limit, timeoutMs);
  const byQueue = new Map<string, OldestReadyJob>();
  let oldest: OldestReadyJob | null = null;
  for (const head of heads) {
    const job = { id: head.id, queue: head.queue, kind: head.kind, tenant: head.tenant, ageMs: head.ageMs };
    const queueOldest = byQueue.get(head.queue);
    if (queueOldest === undefined || job.ageMs > queueOldest.ageMs) byQueue.set(head.queue, job);
    if (oldest === null || job.ageMs > oldest.ageMs) oldest = job;
  }
  return { byQueue, oldest };
}
