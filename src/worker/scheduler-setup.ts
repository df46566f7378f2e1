import type { Logger } from "pino";
import type { Conveyor } from "../client/conveyor.js";
import { collectSchedules } from "../core/schedules.js";
import { CronStore } from "../store/cron-store.js";
import type { WorkerMetrics } from "../metrics/worker-metrics.js";
import type { ResolvedWorkerOptions } from "./options.js";
import { CronScheduler } from "./scheduler.js";

/** The cron scheduler for a worker: the schedules of the kinds it runs, or null when it has none or they are turned off. */
export function createScheduler(conveyor: Conveyor, options: ResolvedWorkerOptions, log: Logger, metrics: WorkerMetrics): CronScheduler | null {
  if (!options.schedules) return null;
  const definitions = options.kinds.map((kind) => conveyor.jobs.get(kind)!);
  const schedules = collectSchedules(definitions);
  if (schedules.length === 0) return null;
  return new CronScheduler(
    conveyor.pool,
    conveyor.store,
    new CronStore(conveyor.pool, conveyor.store.schema),
    schedules,
    conveyor.jobs,
    log,
    metrics.cronTicksEnqueued,
  );
}
