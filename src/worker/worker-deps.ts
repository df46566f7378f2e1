import type { Logger } from "pino";
import type { AnyJobDefinition } from "../core/define-job.js";
import type { PruneOptions, PruneResult } from "../core/retention.js";
import type { DatabaseClock } from "../store/database-clock.js";
import type { ConnectionConfig, Pool } from "../store/db.js";
import type { JobStore } from "../store/job-store.js";

/**
 * Everything a worker takes from the client it serves, named one by one so
 * that the worker depends on the store and core, never on the client. The
 * composition module (src/conveyor.ts) builds it in `conveyor.worker()`.
 */
export interface WorkerDeps {
  /** The client's pool: handler transactions, cron ticks, tenant index, limited claims. */
  readonly pool: Pool;
  /**
   * How the client's connections are made. The worker opens two of its own
   * the same way: the LISTEN connection and its claim connection.
   */
  readonly connection: ConnectionConfig;
  /** Schema holding Conveyor's tables. */
  readonly schema: string;
  /** The client's store, shared so the wake-ups of the worker's writes go out with the client's. */
  readonly store: JobStore;
  /** The database server's clock, which execution ids and cron ticks are made from. */
  readonly clock: DatabaseClock;
  /** Job kinds the client knows, by kind; the worker runs these (or the subset its `kinds` option names). */
  readonly jobs: ReadonlyMap<string, AnyJobDefinition>;
  /** The client's logger; a worker logs to a child of it unless its own options give one. */
  readonly logger: Logger;
  /** The client's `prune`, which the worker runs on its retention interval. */
  readonly prune: (options: PruneOptions) => Promise<PruneResult>;
}
