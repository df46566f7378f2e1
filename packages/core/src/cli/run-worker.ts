import type { Logger } from "pino";
import type { Conveyor } from "../conveyor.js";
import { serveMetrics } from "../metrics/metrics-server.js";
import { createWorkerMetrics } from "../metrics/prometheus-metrics.js";
import type { Worker, WorkerOptions } from "../worker/worker.js";
import { untilSignal } from "./session.js";

export interface RunWorkerOptions extends WorkerOptions {
  metricsPort?: number;
}

/**
 * Start a worker for a CLI process: metrics on its own port when asked
 * (prom-client is loaded then, and only then),
 * and SIGTERM/SIGINT handled as graceful shutdown. Resolves once the worker
 * has stopped (after a signal); the caller then exits with code 0.
 * `prepare` (migrations) runs once the options are known to be valid, so a
 * bad option writes nothing to the database.
 */
export async function runWorkerUntilSignal(
  conveyor: Conveyor,
  options: RunWorkerOptions,
  log: Logger,
  prepare: () => Promise<unknown>,
): Promise<Worker> {
  const { metricsPort, ...workerOptions } = options;
  // Made before anything else: without prom-client, --metrics-port stops the command before migrations.
  const metrics = metricsPort === undefined ? undefined : await createWorkerMetrics();
  const worker = conveyor.worker({ ...workerOptions, logger: log, metrics });
  await prepare();
  // A handler's stray promise rejecting after it returned must not take the worker (and every other job) down.
  process.on("unhandledRejection", (reason) => log.error({ err: reason }, "unhandled promise rejection (ignored)"));
  // Listen for the signals before the worker says it has started: a SIGTERM
  // sent as soon as "worker started" is read would otherwise meet the default
  // action and kill the process (seen in CI, a test signalling on that line).
  const signalled = untilSignal(log, "shutting down gracefully", () => void worker.stop({ graceMs: 0 }));
  await worker.start();
  const served = metrics && metricsPort !== undefined ? await serveMetrics(metrics.registry, metricsPort) : null;
  if (served) log.info({ port: served.port }, "worker metrics at /metrics");
  await signalled;
  await worker.stop().catch((error: unknown) => log.error({ err: error }, "error during shutdown"));
  served?.server.close();
  return worker;
}
