import type * as PromClient from "prom-client";
import { ConfigError } from "../core/errors.js";
import { checkKnownFields } from "../core/validate.js";
import type { MetricsRegistry } from "./metric-types.js";
import type { WorkerMetrics } from "./worker-metrics.js";

/** Options of `createWorkerMetrics`. */
export interface WorkerMetricsOptions {
  /**
   * A prom-client `Registry` to register the metrics in, beside an app's
   * own. Default a registry of their own, so that several sets (or the
   * worker's and the API's) in one process never collide.
   */
  registry?: MetricsRegistry;
}

const OPTION_FIELDS = { registry: true } as const;

/**
 * Make a worker's Prometheus metrics, to give to `conveyor.worker({ metrics })`
 * (and to every worker that should share them). They are prom-client
 * metrics: prom-client is an optional peer of this package, loaded here and
 * only here, so a worker given no metrics records none and needs no
 * prom-client. Without prom-client installed, this rejects with a
 * `ConfigError` that names the package to install.
 *
 * @example
 * const metrics = await createWorkerMetrics();
 * const worker = conveyor.worker({ metrics });
 * // serve await metrics.registry.metrics(), as metrics.registry.contentType
 */
export async function createWorkerMetrics(options: WorkerMetricsOptions = {}): Promise<WorkerMetrics> {
  checkKnownFields(options, OPTION_FIELDS, "a metrics option", { path: "metrics", ErrorType: ConfigError });
  const given = options.registry;
  if (given !== undefined && typeof (given as Partial<MetricsRegistry> | null)?.registerMetric !== "function") {
    throw new ConfigError("metrics.registry must be a prom-client Registry");
  }
  const prom = await loadPromClient();
  const registry = (given ?? new prom.Registry()) as PromClient.Registry;
  const registers = [registry];
  const activeSources = new Set<() => number>();
  return {
    registry,
    claimed: new prom.Counter({ name: "conveyor_jobs_claimed_total", help: "Jobs claimed by this worker", labelNames: ["kind", "queue"], registers }),
    completed: new prom.Counter({
      name: "conveyor_jobs_completed_total",
      help: "Attempts ended, by outcome (succeeded, failed, timeout, retry_after, cancelled, interrupted, lease_lost)",
      labelNames: ["kind", "outcome"],
      registers,
    }),
    duration: new prom.Histogram({
      name: "conveyor_job_duration_seconds",
      help: "Handler run time per attempt",
      labelNames: ["kind", "outcome"],
      buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300],
      registers,
    }),
    steps: new prom.Counter({ name: "conveyor_steps_total", help: "Durable steps: completed, replayed or failed", labelNames: ["kind", "outcome"], registers }),
    suspensions: new prom.Counter({ name: "conveyor_suspensions_total", help: "Attempts suspended by sleep or waitForEvent", labelNames: ["kind"], registers }),
    waits: new prom.Counter({ name: "conveyor_waits_ended_total", help: "Waits for an event that ended: received or timed_out", labelNames: ["outcome"], registers }),
    woken: new prom.Counter({ name: "conveyor_jobs_woken_total", help: "Sleeping jobs queued when their time came", registers }),
    batchSize: new prom.Histogram({
      name: "conveyor_batch_size",
      help: "Jobs per batch run by a batch handler",
      labelNames: ["kind"],
      buckets: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000],
      registers,
    }),
    deadLettered: new prom.Counter({ name: "conveyor_jobs_dead_lettered_total", help: "Jobs moved to the dead-letter queue", labelNames: ["kind"], registers }),
    fencedWrites: new prom.Counter({
      name: "conveyor_fenced_writes_total",
      help: "Writes refused because this worker no longer owned the job (lease lost)",
      labelNames: ["operation"],
      registers,
    }),
    reclaimed: new prom.Counter({
      name: "conveyor_leases_reclaimed_total",
      help: "Expired leases reclaimed by this worker's sweeps, by where the job went",
      labelNames: ["result"],
      registers,
    }),
    // Read when scraped, not set on every claim and completion: summed over
    // the workers that share these metrics.
    activeJobs: new prom.Gauge({
      name: "conveyor_active_jobs",
      help: "Jobs this worker holds right now",
      registers,
      collect() {
        let active = 0;
        for (const source of activeSources) active += source();
        this.set(active);
      },
    }),
    dequeueWait: new prom.Histogram({
      name: "conveyor_dequeue_wait_seconds",
      help: "Time from a job becoming ready (run_at) to its claim",
      buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30, 120, 600],
      registers,
    }),
    databaseErrors: new prom.Counter({
      name: "conveyor_worker_database_errors_total",
      help: "Database errors seen by the worker, by operation",
      labelNames: ["operation"],
      registers,
    }),
    claimLockTimeouts: new prom.Counter({
      name: "conveyor_claim_lock_timeouts_total",
      help: "Capped claims that gave up waiting for their cap's lock (held by something else) and skipped that cap for one round; cap is a queue name, or tenants",
      labelNames: ["cap"],
      registers,
    }),
    cronTicksEnqueued: new prom.Counter({
      name: "conveyor_cron_ticks_enqueued_total",
      help: "Cron ticks this worker's scheduler enqueued, by schedule (each tick is enqueued by one worker only)",
      labelNames: ["schedule"],
      registers,
    }),
    pruned: new prom.Counter({
      name: "conveyor_jobs_pruned_total",
      help: "Job rows deleted by this worker's retention prunes: finished (succeeded, cancelled) or dead_letter",
      labelNames: ["reason"],
      registers,
    }),
    trackActiveJobs(source) {
      activeSources.add(source);
      return () => activeSources.delete(source);
    },
  };
}

/** prom-client, or a `ConfigError` naming it when it is not installed. */
async function loadPromClient(): Promise<typeof PromClient> {
  try {
    return await import("prom-client");
  } catch (error) {
    const { code, message } = error as NodeJS.ErrnoException;
    if (code === "ERR_MODULE_NOT_FOUND" && message.includes("'prom-client'")) {
      throw new ConfigError("worker metrics are prom-client metrics, and prom-client is not installed: npm install prom-client");
    }
    throw error;
  }
}
