import type { Logger } from "pino";
import { collectSchedules } from "../core/schedules.js";
import type { MetricRecorders } from "../metrics/worker-metrics.js";
import type { ResolvedWorkerOptions } from "./options.js";
import { CronScheduler } from "./scheduler.js";
import type { WorkerDeps } from "./worker-deps.js";

/** The cron scheduler for a worker: the schedules of the kinds it runs, or null when it has none or they are turned off. */
export function createScheduler(deps: WorkerDeps, options: ResolvedWorkerOptions, log: Logger, metrics: MetricRecorders): CronScheduler | null {
  if (!options.schedules) return null;
  const definitions = options.kinds.map((kind) => deps.jobs.get(kind)!);
  const schedules = collectSchedules(definitions);
  if (schedules.length === 0) return null;
  return new CronScheduler(deps.store.pool, deps.store.jobs, deps.store.cron, schedules, deps.jobs, log, metrics.cronTicksEnqueued);
}
