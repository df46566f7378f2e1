import { ConveyorClient } from "./client/conveyor-client.js";
import { Worker, type WorkerOptions } from "./worker/worker.js";

/**
 * Conveyor: the client (enqueue, inspect, cancel; flows, dead letters,
 * queues, key limits, bulk actions and API keys as its parts) and the maker
 * of its workers. One per process is typical; it holds a connection pool.
 *
 * The composition of the two halves: the client (src/client) knows nothing
 * of workers and the worker (src/worker) nothing of the client; this class
 * is the one place that knows both, and hands a worker exactly what it uses
 * of the client (WorkerDeps), read from the client's protected `context`.
 *
 * @example
 * const conveyor = new Conveyor({ connectionString: process.env.DATABASE_URL, jobs: [sendEmail] });
 * await conveyor.migrate();
 * const job = await conveyor.enqueue(sendEmail, { to: "ada@example.com", subject: "Hi" });
 * await conveyor.worker({ concurrency: 5 }).start();
 */
export class Conveyor extends ConveyorClient {
  /** Create a worker for this client's job kinds. Call `start()` on it. */
  worker(options: WorkerOptions = {}): Worker {
    const { store, connection, listenConnection, tracing } = this.context;
    const deps = {
      connection,
      listenConnection,
      store,
      tracing,
      jobs: this.jobs,
      logger: this.logger,
      prune: this.prune.bind(this),
    };
    return new Worker(deps, options);
  }
}
