import type { MetricCounter, MetricGauge, MetricHistogram, MetricReading, MetricsRegistry } from "./metric-types.js";

/**
 * A worker's Prometheus metrics, made by `createWorkerMetrics` and given
 * to workers as their `metrics` option. Workers given the same set share
 * it: their counts add up, and `activeJobs` is the sum of what they hold.
 */
export interface WorkerMetrics {
  /** The registry every metric below is in (the one given to `createWorkerMetrics`, else one of its own). */
  readonly registry: MetricsRegistry;
  /** `conveyor_jobs_claimed_total{kind,queue}`: jobs claimed. */
  readonly claimed: MetricCounter<"kind" | "queue">;
  /** `conveyor_jobs_completed_total{kind,outcome}`: attempts ended, by outcome. */
  readonly completed: MetricCounter<"kind" | "outcome">;
  /** `conveyor_job_duration_seconds{kind,outcome}`: attempt run time. */
  readonly duration: MetricHistogram<"kind" | "outcome">;
  /** `conveyor_jobs_dead_lettered_total{kind}`: jobs dead-lettered. */
  readonly deadLettered: MetricCounter<"kind">;
  /** `conveyor_fenced_writes_total{operation}`: writes refused because the attempt no longer owned its job. */
  readonly fencedWrites: MetricCounter<"operation">;
  /** `conveyor_leases_reclaimed_total{result}`: expired leases swept. */
  readonly reclaimed: MetricCounter<"result">;
  /** `conveyor_active_jobs`: attempts running now, read when scraped. */
  readonly activeJobs: MetricGauge;
  /** `conveyor_dequeue_wait_seconds`: from a job becoming ready to its claim. */
  readonly dequeueWait: MetricHistogram;
  /** `conveyor_worker_database_errors_total{operation}`: database errors the worker met and retried. */
  readonly databaseErrors: MetricCounter<"operation">;
  /** `conveyor_claim_lock_timeouts_total{cap}`: claims that gave a capped queue or tenant up for a round. */
  readonly claimLockTimeouts: MetricCounter<"cap">;
  /** `conveyor_jobs_pruned_total{reason}`: rows deleted by retention. */
  readonly pruned: MetricCounter<"reason">;
  /** `conveyor_cron_ticks_enqueued_total{schedule}`: cron ticks enqueued. */
  readonly cronTicksEnqueued: MetricCounter<"schedule">;
  /** `conveyor_steps_total{kind,outcome}`: durable steps completed (recorded), replayed from their record, or failed. */
  readonly steps: MetricCounter<"kind" | "outcome">;
  /** `conveyor_suspensions_total{kind}`: attempts suspended by a sleep or a wait for an event. */
  readonly suspensions: MetricCounter<"kind">;
  /** `conveyor_waits_ended_total{outcome}`: waits for an event that ended in an attempt of this worker: received or timed_out. */
  readonly waits: MetricCounter<"outcome">;
  /** `conveyor_jobs_woken_total`: sleeping jobs this worker queued when their time came. */
  readonly woken: MetricCounter;
  /** `conveyor_batch_size{kind}`: jobs per batch a batch handler ran. */
  readonly batchSize: MetricHistogram<"kind">;
  /** Count `source()` (a worker's jobs held) in `conveyor_active_jobs` until the returned function is called. */
  trackActiveJobs(source: () => number): () => void;
}

/** What a worker's parts record into: its metrics, without their registry. */
export type MetricRecorders = Omit<WorkerMetrics, "registry">;

const NOTHING: MetricReading = Object.freeze({ values: Object.freeze([]) });
const read = (): Promise<MetricReading> => Promise.resolve(NOTHING);
const counter: MetricCounter<string> = { inc() {}, get: read };
const histogram: MetricHistogram<string> = { observe() {}, get: read };

/** The recorders of a worker given no metrics: every record is dropped, and prom-client is never loaded. */
export const NO_METRICS: MetricRecorders = Object.freeze({
  claimed: counter,
  completed: counter,
  duration: histogram,
  deadLettered: counter,
  fencedWrites: counter,
  reclaimed: counter,
  activeJobs: { get: read },
  dequeueWait: histogram,
  databaseErrors: counter,
  claimLockTimeouts: counter,
  pruned: counter,
  cronTicksEnqueued: counter,
  steps: counter,
  suspensions: counter,
  waits: counter,
  woken: counter,
  batchSize: histogram,
  trackActiveJobs: () => () => {},
});
