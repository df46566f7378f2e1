import { hostname } from "node:os";
import { randomBytes } from "node:crypto";
import type { Logger } from "pino";
import {
  DEFAULT_CLAIM_BATCH_SIZE,
  MAX_CLAIM_BATCH_SIZE,
  DEFAULT_CONCURRENCY,
  DEFAULT_FAIRNESS,
  DEFAULT_HEARTBEAT_MS,
  DEFAULT_LEASE_MS,
  DEFAULT_POLL_INTERVAL_MS,
  DEFAULT_PROGRESS_INTERVAL_MS,
  DEFAULT_RECLAIM_INTERVAL_MS,
  DEFAULT_WAKE_INTERVAL_MS,
  DEFAULT_SHUTDOWN_GRACE_MS,
  MIN_LEASE_MS,
} from "../core/defaults.js";
import { ConfigError } from "../core/errors.js";
import { checkKnownFields, type KnownFields, quoted } from "../core/validate.js";
import type { Fairness } from "../core/queue-settings.js";
import type { WorkerMetrics } from "../metrics/worker-metrics.js";
import { type ResolvedRetentionOptions, resolveRetentionOptions, type RetentionOptions } from "./retention-options.js";

/** Options of `conveyor.worker()`: what a worker runs, and how it claims, renews and stops. */
export interface WorkerOptions {
  /** Jobs run at once; the worker never holds more. Default `DEFAULT_CONCURRENCY` (10). */
  concurrency?: number;
  /** Queues to take jobs from; omit for all queues. */
  queues?: readonly string[];
  /** Job kinds to run; default every kind the client was given. */
  kinds?: readonly string[];
  /** How long a claim is owned without renewal. Default `DEFAULT_LEASE_MS` (60 s). */
  leaseMs?: number;
  /** Lease renewal interval; at most a third of `leaseMs`. Default `DEFAULT_HEARTBEAT_MS` (20 s). */
  heartbeatMs?: number;
  /** Polling interval, the fallback when no notification arrives. Default `DEFAULT_POLL_INTERVAL_MS` (1 s). */
  pollIntervalMs?: number;
  /** Expired-lease sweep interval (±25% jitter). Default `DEFAULT_RECLAIM_INTERVAL_MS` (15 s). */
  reclaimIntervalMs?: number;
  /** How often sleeping jobs whose time has come are queued (±25% jitter): a `sleep` ends at most this late. Default `DEFAULT_WAKE_INTERVAL_MS` (1 s). */
  wakeIntervalMs?: number;
  /** How long `stop()` waits for running handlers before aborting them. Default `DEFAULT_SHUTDOWN_GRACE_MS` (30 s). */
  shutdownGraceMs?: number;
  /** Most jobs per claim statement, 1 to `MAX_CLAIM_BATCH_SIZE` (1,000). Default `DEFAULT_CLAIM_BATCH_SIZE` (100). */
  claimBatchSize?: number;
  /** Shortest time between two progress writes of one job (`ctx.progress`); values in between coalesce. Default `DEFAULT_PROGRESS_INTERVAL_MS` (500 ms). */
  progressIntervalMs?: number;
  /**
   * Claim order across tenants: "tenant" gives each claim's slots to the
   * tenants with ready jobs and the fewest jobs running (all workers), so a
   * huge backlog of one tenant cannot starve another's; "off" is plain
   * priority/run_at order. Default `DEFAULT_FAIRNESS` ("off").
   */
  fairness?: Fairness;
  /** Use LISTEN/NOTIFY to wake up at once. Set false behind poolers that cannot LISTEN (polling only). Default true. */
  listen?: boolean;
  /**
   * Prune old rows periodically: succeeded/cancelled jobs after `finishedMs` (7 days), dead letters after
   * `deadLetterMs` (30 days), every `intervalMs` (5 min), `batchSize` (1,000) rows per statement; `false`: never.
   * Default on, with those values (see `RetentionOptions`).
   */
  retention?: RetentionOptions | false;
  /** Worker id as stored in `locked_by` and `workers`. Default `<hostname>-<pid>-<random>`. */
  id?: string;
  /** Enqueue the due ticks of the cron schedules of this worker's kinds (every worker may; each tick is enqueued once). Default true. */
  schedules?: boolean;
  /** Logger; default the client's. */
  logger?: Logger;
  /**
   * Prometheus metrics to record into, made by `createWorkerMetrics` (which needs prom-client); workers given
   * the same set share it. Default none: the worker records no metrics and never loads prom-client.
   */
  metrics?: WorkerMetrics;
}

/**
 * `WorkerOptions` with every default filled in and every value checked
 * (`worker.options`); each field means what the option of the same name
 * does, with `null` for "every queue" and for retention turned off.
 */
export interface ResolvedWorkerOptions {
  /** As `WorkerOptions.concurrency`. */
  readonly concurrency: number;
  /** As `WorkerOptions.queues`; null for every queue. */
  readonly queues: readonly string[] | null;
  /** As `WorkerOptions.kinds`. */
  readonly kinds: readonly string[];
  /** As `WorkerOptions.leaseMs`. */
  readonly leaseMs: number;
  /** As `WorkerOptions.heartbeatMs`. */
  readonly heartbeatMs: number;
  /** As `WorkerOptions.pollIntervalMs`. */
  readonly pollIntervalMs: number;
  /** As `WorkerOptions.reclaimIntervalMs`. */
  readonly reclaimIntervalMs: number;
  /** As `WorkerOptions.wakeIntervalMs`. */
  readonly wakeIntervalMs: number;
  /** As `WorkerOptions.shutdownGraceMs`. */
  readonly shutdownGraceMs: number;
  /** As `WorkerOptions.claimBatchSize`. */
  readonly claimBatchSize: number;
  /** As `WorkerOptions.listen`. */
  readonly listen: boolean;
  /** As `WorkerOptions.progressIntervalMs`. */
  readonly progressIntervalMs: number;
  /** As `WorkerOptions.id`. */
  readonly id: string;
  /** As `WorkerOptions.schedules`. */
  readonly schedules: boolean;
  /** Null when pruning is off. */
  readonly retention: ResolvedRetentionOptions | null;
  /** As `WorkerOptions.fairness`. */
  readonly fairness: Fairness;
}

function positiveInteger(value: number, field: string): number {
  if (!Number.isInteger(value) || value < 1) throw new ConfigError(`worker.${field} must be an integer >= 1, got ${quoted(value)}`);
  return value;
}

function claimBatchSize(value: number): number {
  positiveInteger(value, "claimBatchSize");
  if (value > MAX_CLAIM_BATCH_SIZE) throw new ConfigError(`worker.claimBatchSize must be at most ${MAX_CLAIM_BATCH_SIZE}, got ${quoted(value)}`);
  return value;
}

function duration(value: number, field: string, min = 1): number {
  if (!Number.isFinite(value) || value < min) throw new ConfigError(`worker.${field} must be a number of ms >= ${min}, got ${quoted(value)}`);
  return value;
}

const WORKER_OPTION_FIELDS: KnownFields<WorkerOptions> = {
  concurrency: true,
  queues: true,
  kinds: true,
  leaseMs: true,
  heartbeatMs: true,
  pollIntervalMs: true,
  reclaimIntervalMs: true,
  wakeIntervalMs: true,
  shutdownGraceMs: true,
  claimBatchSize: true,
  progressIntervalMs: true,
  fairness: true,
  listen: true,
  retention: true,
  id: true,
  schedules: true,
  logger: true,
  metrics: true,
};

export function resolveWorkerOptions(options: WorkerOptions, knownKinds: readonly string[]): ResolvedWorkerOptions {
  checkKnownFields(options, WORKER_OPTION_FIELDS, "a worker option", { path: "worker", ErrorType: ConfigError });
  const leaseMs = duration(options.leaseMs ?? DEFAULT_LEASE_MS, "leaseMs", MIN_LEASE_MS);
  const heartbeatMs = duration(options.heartbeatMs ?? Math.min(DEFAULT_HEARTBEAT_MS, leaseMs / 3), "heartbeatMs");
  // Two renewals must fit in one lease with room for a slow round trip.
  if (heartbeatMs > leaseMs / 3) {
    throw new ConfigError(`worker.heartbeatMs (${heartbeatMs}) must be at most a third of worker.leaseMs (${leaseMs})`);
  }
  const kinds = options.kinds ?? knownKinds;
  for (const kind of kinds) {
    if (!knownKinds.includes(kind)) throw new ConfigError(`worker.kinds: "${kind}" is not one of the client's jobs`);
  }
  if (kinds.length === 0) throw new ConfigError("worker has no job kinds to run: pass jobs to new Conveyor({ jobs })");
  if (options.queues && options.queues.length === 0) throw new ConfigError("worker.queues is empty; omit it to serve all queues");
  return Object.freeze({
    concurrency: positiveInteger(options.concurrency ?? DEFAULT_CONCURRENCY, "concurrency"),
    queues: options.queues ? [...options.queues] : null,
    kinds: [...kinds],
    leaseMs,
    heartbeatMs,
    pollIntervalMs: duration(options.pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS, "pollIntervalMs", 10),
    reclaimIntervalMs: duration(options.reclaimIntervalMs ?? DEFAULT_RECLAIM_INTERVAL_MS, "reclaimIntervalMs", 10),
    wakeIntervalMs: duration(options.wakeIntervalMs ?? DEFAULT_WAKE_INTERVAL_MS, "wakeIntervalMs", 10),
    shutdownGraceMs: duration(options.shutdownGraceMs ?? DEFAULT_SHUTDOWN_GRACE_MS, "shutdownGraceMs", 0),
    claimBatchSize: claimBatchSize(options.claimBatchSize ?? DEFAULT_CLAIM_BATCH_SIZE),
    listen: options.listen ?? true,
    progressIntervalMs: duration(options.progressIntervalMs ?? DEFAULT_PROGRESS_INTERVAL_MS, "progressIntervalMs", 0),
    id: options.id ?? `${hostname()}-${process.pid}-${randomBytes(3).toString("hex")}`,
    schedules: options.schedules ?? true,
    retention: resolveRetentionOptions(options.retention),
    fairness: fairnessOf(options.fairness ?? DEFAULT_FAIRNESS),
  });
}

function fairnessOf(value: unknown): Fairness {
  if (value !== "off" && value !== "tenant") throw new ConfigError(`worker.fairness must be "off" or "tenant", got ${JSON.stringify(value)}`);
  return value;
}
