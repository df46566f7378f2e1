import { type Command, Option } from "commander";
import { DEFAULT_SCHEMA } from "../../core/defaults.js";
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
  listen: boolean;
  migrate: boolean;
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
    .option("--no-listen", "poll only (for poolers that cannot LISTEN)")
    .addOption(new Option("--fairness <mode>", "claim order across tenants: fair shares (tenant) or plain priority order (off, the default)").choices(["off", "tenant"]))
    .option("--no-migrate", "do not apply migrations at start")
    .action(async (options: WorkerCommandOptions) => {
      await withSession({ schema: options.schema, jobs: options.jobs, migrate: options.migrate }, ({ conveyor, log }) =>
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
            listen: options.listen,
            fairness: options.fairness,
          },
          log,
        ),
      );
    });
}
