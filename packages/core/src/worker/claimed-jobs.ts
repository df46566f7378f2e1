import type { Logger } from "pino";
import type { ClaimedJob } from "../core/model.js";
import type { MetricRecorders } from "../metrics/worker-metrics.js";
import type { JobStore } from "../store/job-store.js";

/**
 * Attach the trace contexts stored at enqueue to claimed jobs, for their
 * attempts' spans. Read apart from the claim, and only while a tracer
 * provider is registered, so the claim statements stay as they are: one
 * lookup by primary key per claimed batch. A failed read costs the links,
 * never the jobs.
 */
export async function readTraceContexts(store: JobStore, jobs: ClaimedJob[], log: Logger): Promise<void> {
  try {
    const contexts = await store.jobTraceContexts(jobs.map((job) => job.id));
    for (const job of jobs) {
      const found = contexts.get(job.id);
      job.traceContext = found?.own ?? null;
      // A flow's jobs share their enqueue's context: link only the dependencies enqueued apart.
      const apart = found?.dependencies.filter((context) => context.traceparent !== found.own?.traceparent) ?? [];
      if (apart.length > 0) job.dependencyTraceContexts = apart;
    }
  } catch (error) {
    log.warn({ err: (error as Error).message }, "could not read the claimed jobs' trace contexts; their spans start unlinked");
  }
}

/** One counter increment per kind and queue in a claimed batch, not one per job. */
export function countClaimed(metrics: MetricRecorders, jobs: readonly ClaimedJob[]): void {
  const counts = new Map<string, { kind: string; queue: string; n: number }>();
  for (const { kind, queue } of jobs) {
    const key = `${kind}\u0000${queue}`;
    const entry = counts.get(key);
    if (entry) entry.n += 1;
    else counts.set(key, { kind, queue, n: 1 });
  }
  for (const { kind, queue, n } of counts.values()) metrics.claimed.inc({ kind, queue }, n);
}
