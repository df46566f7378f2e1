import { Counter, Gauge, Histogram, Registry } from "prom-client";

/**
 * The worker's Prometheus metrics, in a registry of their own so several
 * workers (or a worker and the API) in one process never collide.
 */
export class WorkerMetrics {
  /** The registry every metric below is in (its own unless one was given). */
  readonly registry: Registry;
  /** `conveyor_jobs_claimed_total{kind,queue}`: jobs claimed. */
  readonly claimed: Counter<"kind" | "queue">;
  /** `conveyor_jobs_completed_total{kind,outcome}`: attempts ended, by outcome. */
  readonly completed: Counter<"kind" | "outcome">;
  /** `conveyor_job_duration_seconds{kind,outcome}`: attempt run time. */
  readonly duration: Histogram<"kind" | "outcome">;
  /** `conveyor_jobs_dead_lettered_total{kind}`: jobs dead-lettered. */
  readonly deadLettered: Counter<"kind">;
  /** `conveyor_fenced_writes_total{operation}`: writes refused because the attempt no longer owned its job. */
  readonly fencedWrites: Counter<"operation">;
  /** `conveyor_leases_reclaimed_total{result}`: expired leases swept. */
  readonly reclaimed: Counter<"result">;
  /** `conveyor_active_jobs`: attempts running now. */
  readonly activeJobs: Gauge;
  /** `conveyor_dequeue_wait_seconds`: from a job becoming ready to its claim. */
  readonly dequeueWait: Histogram;
  /** `conveyor_worker_database_errors_total{operation}`: database errors the worker met and retried. */
  readonly databaseErrors: Counter<"operation">;
  /** `conveyor_claim_lock_timeouts_total{cap}`: claims that gave a capped queue or tenant up for a round. */
  readonly claimLockTimeouts: Counter<"cap">;
  /** `conveyor_jobs_pruned_total{reason}`: rows deleted by retention. */
  readonly pruned: Counter<"reason">;
  /** `conveyor_cron_ticks_enqueued_total{schedule}`: cron ticks enqueued. */
  readonly cronTicksEnqueued: Counter<"schedule">;
  /** `conveyor_steps_total{kind,outcome}`: durable steps completed (recorded), replayed from their record, or failed. */
  readonly steps: Counter<"kind" | "outcome">;
  /** `conveyor_suspensions_total{kind}`: attempts suspended by a sleep or a wait for an event. */
  readonly suspensions: Counter<"kind">;
  /** `conveyor_waits_ended_total{outcome}`: waits for an event that ended in an attempt of this worker: received or timed_out. */
  readonly waits: Counter<"outcome">;
  /** `conveyor_jobs_woken_total`: sleeping jobs this worker queued when their time came. */
  readonly woken: Counter;
  /** `conveyor_batch_size{kind}`: jobs per batch a batch handler ran. */
  readonly batchSize: Histogram<"kind">;

  private readonly activeSources = new Set<() => number>();

  constructor(registry: Registry = new Registry()) {
    this.registry = registry;
    const registers = [registry];
    this.claimed = new Counter({ name: "conveyor_jobs_claimed_total", help: "Jobs claimed by this worker", labelNames: ["kind", "queue"], registers });
    this.completed = new Counter({
      name: "conveyor_jobs_completed_total",
      help: "Attempts ended, by outcome (succeeded, failed, timeout, retry_after, cancelled, interrupted, lease_lost)",
      labelNames: ["kind", "outcome"],
      registers,
    });
    this.duration = new Histogram({
      name: "conveyor_job_duration_seconds",
      help: "Handler run time per attempt",
      labelNames: ["kind", "outcome"],
      buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300],
      registers,
    });
    this.steps = new Counter({ name: "conveyor_steps_total", help: "Durable steps: completed, replayed or failed", labelNames: ["kind", "outcome"], registers });
    this.suspensions = new Counter({ name: "conveyor_suspensions_total", help: "Attempts suspended by sleep or waitForEvent", labelNames: ["kind"], registers });
    this.waits = new Counter({ name: "conveyor_waits_ended_total", help: "Waits for an event that ended: received or timed_out", labelNames: ["outcome"], registers });
    this.woken = new Counter({ name: "conveyor_jobs_woken_total", help: "Sleeping jobs queued when their time came", registers });
    this.batchSize = new Histogram({
      name: "conveyor_batch_size",
      help: "Jobs per batch run by a batch handler",
      labelNames: ["kind"],
      buckets: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000],
      registers,
    });
    this.deadLettered = new Counter({ name: "conveyor_jobs_dead_lettered_total", help: "Jobs moved to the dead-letter queue", labelNames: ["kind"], registers });
    this.fencedWrites = new Counter({
      name: "conveyor_fenced_writes_total",
      help: "Writes refused because this worker no longer owned the job (lease lost)",
      labelNames: ["operation"],
      registers,
    });
    this.reclaimed = new Counter({
      name: "conveyor_leases_reclaimed_total",
      help: "Expired leases reclaimed by this worker's sweeps, by where the job went",
      labelNames: ["result"],
      registers,
    });
    const activeSources = this.activeSources;
    // Read when scraped, not set on every claim and completion: summed over
    // the workers that share these metrics.
    this.activeJobs = new Gauge({
      name: "conveyor_active_jobs",
      help: "Jobs this worker holds right now",
      registers,
      collect() {
        let active = 0;
        for (const source of activeSources) active += source();
        this.set(active);
      },
    });
    this.dequeueWait = new Histogram({
      name: "conveyor_dequeue_wait_seconds",
      help: "Time from a job becoming ready (run_at) to its claim",
      buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30, 120, 600],
      registers,
    });
    this.databaseErrors = new Counter({
      name: "conveyor_worker_database_errors_total",
      help: "Database errors seen by the worker, by operation",
      labelNames: ["operation"],
      registers,
    });
    this.claimLockTimeouts = new Counter({
      name: "conveyor_claim_lock_timeouts_total",
      help: "Capped claims that gave up waiting for their cap's lock (held by something else) and skipped that cap for one round; cap is a queue name, or tenants",
      labelNames: ["cap"],
      registers,
    });
    this.cronTicksEnqueued = new Counter({
      name: "conveyor_cron_ticks_enqueued_total",
      help: "Cron ticks this worker's scheduler enqueued, by schedule (each tick is enqueued by one worker only)",
      labelNames: ["schedule"],
      registers,
    });
    this.pruned = new Counter({
      name: "conveyor_jobs_pruned_total",
      help: "Job rows deleted by this worker's retention prunes: finished (succeeded, cancelled) or dead_letter",
      labelNames: ["reason"],
      registers,
    });
  }

  /** Count `source()` (a worker's jobs held) in conveyor_active_jobs until the returned function is called. */
  trackActiveJobs(source: () => number): () => void {
    this.activeSources.add(source);
    return () => this.activeSources.delete(source);
  }
}
