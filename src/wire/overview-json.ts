import type { JobCount, Overview } from "../core/overview.js";
import { isoOrNull } from "./serialize.js";

/**
 * The JSON of counts and the overview (`GET /v1/jobs/count`,
 * `GET /v1/overview`, and the CLI's `--json`): as the library returns them,
 * with times as ISO 8601 strings.
 */

/** `GET /v1/jobs/count`. */
export function jobCountJson(count: JobCount): { count: number; estimated: boolean } {
  return { count: count.count, estimated: count.estimated };
}

/** `GET /v1/overview`. */
export function overviewJson(overview: Overview) {
  return {
    at: isoOrNull(overview.at),
    tenant: overview.tenant,
    exactCountLimit: overview.exactCountLimit,
    windowMs: overview.windowMs,
    queues: overview.queues.map((queue) => ({
      queue: queue.queue,
      counts: queue.counts,
      estimated: queue.estimated,
      oldestReadyAgeMs: queue.oldestReadyAgeMs,
      paused: queue.paused,
      recent: queue.recent,
    })),
    kinds: overview.kinds,
    oldestReadyJob: overview.oldestReadyJob,
    stuck: overview.stuck,
    topErrors: overview.topErrors.map((group) => ({
      message: group.message,
      count: group.count,
      kinds: group.kinds,
      lastSeenAt: isoOrNull(group.lastSeenAt),
    })),
    workers: overview.workers.map((worker) => ({
      id: worker.id,
      hostname: worker.hostname,
      pid: worker.pid,
      queues: worker.queues,
      concurrency: worker.concurrency,
      running: worker.running,
      lastSeenAt: isoOrNull(worker.lastSeenAt),
    })),
    incomplete: overview.incomplete,
  };
}
