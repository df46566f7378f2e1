import type { WorkerInfo } from "../core/model.js";
import type { Queryable } from "./db.js";
import type { Queries } from "./queries.js";
import { rowToWorker } from "./rows.js";
import { runQuery } from "./run-query.js";

/** The workers table: each live worker's registration, renewed while it runs (statements in `sql/workers.ts`). */
export class WorkerStore {
  constructor(
    private readonly pool: Queryable,
    private readonly q: Queries,
  ) {}

  async workerUpsert(worker: {
    id: string;
    hostname: string;
    pid: number;
    queues: readonly string[] | null;
    kinds: readonly string[];
    concurrency: number;
    staleMs: number;
  }): Promise<void> {
    await runQuery(this.pool, this.q.workerUpsert, [
      worker.id,
      worker.hostname,
      worker.pid,
      worker.queues,
      worker.kinds,
      worker.concurrency,
      worker.staleMs,
    ]);
  }

  async workerDeregister(id: string): Promise<void> {
    await runQuery(this.pool, this.q.workerDeregister, [id]);
  }

  async workerList(): Promise<WorkerInfo[]> {
    const { rows } = await runQuery(this.pool, this.q.workerList, []);
    return rows.map(rowToWorker);
  }
}
