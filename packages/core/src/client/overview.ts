import { OVERVIEW_STUCK_JOBS, OVERVIEW_TOP_ERRORS, OVERVIEW_WINDOW_MS } from "../core/defaults.js";
import { SearchTimeoutError } from "../core/errors.js";
import type { Overview, OverviewPart, OverviewQueue, RecentOutcomes } from "../core/overview.js";
import type { Store } from "../store/store.js";
import type { EndedAttempts, RecentActivity } from "../store/stats-store.js";
import type { LeaseExpired } from "../store/queue-store.js";
import { queueCountLimits, type ReadyAges, readQueueCounts, readReadyAges } from "./counts.js";

/** How an overview is read: the client's limits. */
export interface OverviewLimits {
  /** The client's `exactCountLimit`. */
  exactCountLimit: number;
  /** The client's `searchTimeoutMs`. */
  searchTimeoutMs: number;
}

/** `value`, or null when it did not finish within the time bound (any other error is thrown). */
async function unlessTimedOut<T>(read: Promise<T>): Promise<T | null> {
  try {
    return await read;
  } catch (error) {
    if (error instanceof SearchTimeoutError) return null;
    throw error;
  }
}

function outcomes(ended: EndedAttempts | undefined): RecentOutcomes {
  const succeeded = ended?.succeeded ?? 0;
  const failed = ended?.failed ?? 0;
  return { succeeded, failed, failureRate: succeeded + failed === 0 ? null : failed / (succeeded + failed) };
}

/**
 * Read the overview of `tenant` (null: all tenants) from `store`: each part
 * is one statement in a transaction of its own under the search time
 * bound, read in parallel. Counts that do not finish in time are
 * estimated; any other part that does not is left out and named in
 * `incomplete`.
 */
export async function readOverview(store: Store, tenant: string | null, limits: OverviewLimits): Promise<Overview> {
  const countLimits = queueCountLimits(limits);
  const limit = countLimits.perQueue;
  const timeoutMs = limits.searchTimeoutMs;
  const [at, counts, ages, recent, stuck, settings, workers] = await Promise.all([
    store.clock.now(),
    readQueueCounts(store.queues, tenant, countLimits),
    unlessTimedOut<ReadyAges>(readReadyAges(store.queues, tenant, limit, timeoutMs)),
    unlessTimedOut<RecentActivity>(store.stats.statsRecentActivity(tenant, OVERVIEW_WINDOW_MS, OVERVIEW_TOP_ERRORS, timeoutMs)),
    unlessTimedOut<LeaseExpired>(store.queues.jobLeaseExpiredList(tenant, limit + 1, OVERVIEW_STUCK_JOBS, timeoutMs)),
    store.queueSettings.queueSettingsList(),
    store.queues.workerListWithJobs(tenant),
  ]);
  const incomplete: OverviewPart[] = [];
  if (ages === null) incomplete.push("oldestReady");
  if (recent === null) incomplete.push("recent");
  if (stuck === null) incomplete.push("stuck");

  const paused = new Map(settings.map((s) => [s.queue, s.paused]));
  const recentByQueue = new Map(recent?.queues.map((q) => [q.name, q]));
  const queues: OverviewQueue[] = counts.map((queue) => ({
    ...queue,
    oldestReadyAgeMs: ages?.byQueue.get(queue.queue)?.ageMs ?? null,
    oldestReadyJob: ages?.byQueue.get(queue.queue) ?? null,
    paused: paused.get(queue.queue) ?? false,
    recent: recent === null ? null : outcomes(recentByQueue.get(queue.queue)),
  }));
  return {
    at: new Date(at),
    tenant,
    exactCountLimit: limit,
    windowMs: OVERVIEW_WINDOW_MS,
    queues,
    kinds: (recent?.kinds ?? []).map((kind) => ({ kind: kind.name, ...outcomes(kind) })).sort((a, b) => (a.kind < b.kind ? -1 : a.kind > b.kind ? 1 : 0)),
    oldestReadyJob: ages?.oldest ?? null,
    stuck: stuck === null ? null : { count: Math.min(stuck.count, limit), estimated: stuck.count > limit, jobs: stuck.jobs },
    topErrors: recent?.errors ?? [],
    workers: workers.map((worker) => ({
      id: worker.id,
      hostname: worker.hostname,
      pid: worker.pid,
      queues: worker.queues,
      concurrency: worker.concurrency,
      running: worker.runningJobIds.length,
      lastSeenAt: worker.lastSeenAt,
    })),
    incomplete,
  };
}
