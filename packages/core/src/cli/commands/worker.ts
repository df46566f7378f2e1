import { type Command, Option } from "commander";
import {
  DEFAULT_CLAIM_BATCH_SIZE,
  DEFAULT_CONCURRENCY,
  DEFAULT_FAIRNESS,
  DEFAULT_HEARTBEAT_MS,
  DEFAULT_LEASE_MS,
  DEFAULT_POLL_INTERVAL_MS,
  DEFAULT_PROGRESS_INTERVAL_MS,
  DEFAULT_RECLAIM_INTERVAL_MS,
  DEFAULT_RETENTION_DEAD_LETTER_MS,
  DEFAULT_RETENTION_FINISHED_MS,
  DEFAULT_SCHEMA,
  DEFAULT_SHUTDOWN_GRACE_MS,
  MAX_CLAIM_BATCH_SIZE,
  MIN_LEASE_MS,
} from "../../core/defaults.js";
import { formatDuration } from "../../core/duration.js";
import { durationArgument } from "../duration-argument.js";
import { withDefault } from "../help-text.js";
import { commaList, port, positiveInt } from "../parse.js";
import { runWorkerUntilSignal } from "../run-worker.js";
import { withSession } from "../session.js";

interface WorkerCommandOptions {
  jobs: string;
  concurrency?: number;
  queues?: string[];
  metricsPort?: number;
  schema: string;
  leaseMs?: number;
  heartbeatMs?: number;
  pollIntervalMs?: number;
  reclaimIntervalMs?: number;
  shutdownGraceMs?: number;
  claimBatchSize?: number;
  progressIntervalMs?: number;
  listen: boolean;
  schedules: boolean;
  migrate: boolean;
  retainFinished?: number;
  retainDead?: number;
  /** false with --no-retention */
  retention: boolean;
  fairness?: "off" | "tenant";
}

export function registerWorker(program: Command): void {
  program
    .command("worker")
    .description("run handlers for the job kinds in a jobs module until SIGTERM/SIGINT")
    .requiredOption("--jobs <module>", "module whose default export is an array of defineJob(...) definitions")
    .option("--concurrency <n>", withDefault("jobs run at once", DEFAULT_CONCURRENCY), positiveInt)
    .option("--queues <a,b>", "queues to serve (default: all)", commaList)
    .option("--metrics-port <port>", "serve Prometheus metrics on this port", port)
    .option("--schema <name>", "schema holding Conveyor's tables", DEFAULT_SCHEMA)
    .option("--lease-ms <ms>", withDefault(`lease length, at least ${MIN_LEASE_MS}`, DEFAULT_LEASE_MS), positiveInt)
    .option("--heartbeat-ms <ms>", withDefault("lease renewal interval, at most a third of the lease", `${DEFAULT_HEARTBEAT_MS}, or a third of the lease when less`), positiveInt)
    .option("--poll-interval-ms <ms>", withDefault("polling interval (fallback to LISTEN/NOTIFY)", DEFAULT_POLL_INTERVAL_MS), positiveInt)
    .option("--reclaim-interval-ms <ms>", withDefault("expired-lease sweep interval", DEFAULT_RECLAIM_INTERVAL_MS), positiveInt)
    .option("--shutdown-grace-ms <ms>", withDefault("how long shutdown waits for running handlers", DEFAULT_SHUTDOWN_GRACE_MS), positiveInt)
    .option(
      "--claim-batch-size <n>",
      withDefault(`most jobs per claim statement, 1 to ${MAX_CLAIM_BATCH_SIZE}; a fraction of --concurrency keeps claims in flight`, DEFAULT_CLAIM_BATCH_SIZE),
      positiveInt,
    )
    .option("--progress-interval-ms <ms>", withDefault("shortest time between two progress writes of one job", DEFAULT_PROGRESS_INTERVAL_MS), positiveInt)
    .option("--no-listen", "poll only (for poolers that cannot LISTEN)")
    .option("--no-schedules", "do not enqueue the cron schedules of the jobs module's kinds (other workers still do)")
    .addOption(new Option("--fairness <mode>", withDefault("claim order across tenants: fair shares (tenant) or plain priority order (off)", DEFAULT_FAIRNESS)).choices(["off", "tenant"]))
    .option("--no-migrate", "do not apply migrations at start")
    .option("--retain-finished <dur>", withDefault("prune succeeded/cancelled jobs this long after they finished", formatDuration(DEFAULT_RETENTION_FINISHED_MS)), durationArgument)
    .option("--retain-dead <dur>", withDefault("prune dead letters this long after they died", formatDuration(DEFAULT_RETENTION_DEAD_LETTER_MS)), durationArgument)
    .option("--no-retention", "never prune old jobs from this worker")
    .action(async (options: WorkerCommandOptions) => {
      // Migrated by runWorkerUntilSignal once the worker's options have passed their checks.
      await withSession({ schema: options.schema, jobs: options.jobs, migrate: false, waitForDatabase: true }, ({ conveyor, log }) =>
        runWorkerUntilSignal(
          conveyor,
          {
            concurrency: options.concurrency,
            queues: options.queues,
            metricsPort: options.metricsPort,
            leaseMs: options.leaseMs,
            heartbeatMs: options.heartbeatMs,
            pollIntervalMs: options.pollIntervalMs,
            reclaimIntervalMs: options.reclaimIntervalMs,
            shutdownGraceMs: options.shutdownGraceMs,
            claimBatchSize: options.claimBatchSize,
            progressIntervalMs: options.progressIntervalMs,
            listen: options.listen,
            schedules: options.schedules,
            retention: options.retention && { finishedMs: options.retainFinished, deadLetterMs: options.retainDead },
            fairness: options.fairness,
          },
          log,
          () => (options.migrate ? conveyor.migrate() : Promise.resolve()),
        ),
      );
    });
}
