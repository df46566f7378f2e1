import { type Command, Option } from "commander";
import { DEFAULT_SCHEMA } from "../../core/defaults.js";
import { durationArgument } from "../duration-argument.js";
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
    .option("--concurrency <n>", "jobs run at once", positiveInt)
    .option("--queues <a,b>", "queues to serve (default: all)", commaList)
    .option("--metrics-port <port>", "serve Prometheus metrics on this port", port)
    .option("--schema <name>", "schema holding Conveyor's tables", DEFAULT_SCHEMA)
    .option("--lease-ms <ms>", "lease length", positiveInt)
    .option("--heartbeat-ms <ms>", "lease renewal interval (at most a third of the lease)", positiveInt)
    .option("--poll-interval-ms <ms>", "polling interval (fallback to LISTEN/NOTIFY)", positiveInt)
    .option("--reclaim-interval-ms <ms>", "expired-lease sweep interval", positiveInt)
    .option("--shutdown-grace-ms <ms>", "how long shutdown waits for running handlers", positiveInt)
    .option("--claim-batch-size <n>", "most jobs per claim statement, 1 to 1000 (default 100; a fraction of --concurrency keeps claims in flight)", positiveInt)
    .option("--progress-interval-ms <ms>", "shortest time between two progress writes of one job (default 500)", positiveInt)
    .option("--no-listen", "poll only (for poolers that cannot LISTEN)")
    .option("--no-schedules", "do not enqueue the cron schedules of the jobs module's kinds (other workers still do)")
    .addOption(new Option("--fairness <mode>", "claim order across tenants: fair shares (tenant) or plain priority order (off, the default)").choices(["off", "tenant"]))
    .option("--no-migrate", "do not apply migrations at start")
    .option("--retain-finished <dur>", "prune succeeded/cancelled jobs this long after they finished (default 7d)", durationArgument)
    .option("--retain-dead <dur>", "prune dead letters this long after they died (default 30d)", durationArgument)
    .option("--no-retention", "never prune old jobs from this worker")
    .action(async (options: WorkerCommandOptions) => {
      // Migrated by runWorkerUntilSignal once the worker's options have passed their checks.
      await withSession({ schema: options.schema, jobs: options.jobs, migrate: false }, ({ conveyor, log }) =>
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
