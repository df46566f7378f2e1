import type { Logger } from "pino";
import type { AnyJobDefinition } from "../core/define-job.js";
import type { PruneOptions, PruneResult } from "../core/retention.js";
import type { ConnectionConfig } from "../store/db.js";
import type { Store } from "../store/store.js";
import type { Tracing } from "../tracing/tracing.js";

/**
 * Everything a worker takes from the client it serves, named one by one so
 * that the worker depends on the store and core, never on the client. The
 * composition module (src/conveyor.ts) builds it in `conveyor.worker()`.
 */
export interface WorkerDeps {
  /**
   * How the client's connections are made. The worker opens two of its own
   * the same way: the LISTEN connection and its claim connection.
   */
  readonly connection: ConnectionConfig;
  /**
   * How the LISTEN connection is made: `connection`, or a direct URL when the
   * client's connections go through a transaction pooler; null when there is
   * none and the worker must poll.
   */
  readonly listenConnection: ConnectionConfig | null;
  /**
   * The client's Store, shared so the statements are bound once and the
   * wake-ups of the worker's writes go out with the client's. Its pool runs
   * handler transactions, cron ticks, the tenant index and limited claims;
   * its clock makes execution ids and cron ticks.
   */
  readonly store: Store;
  /** Job kinds the client knows, by kind; the worker runs these (or the subset its `kinds` option names). */
  readonly jobs: ReadonlyMap<string, AnyJobDefinition>;
  /** The client's logger; a worker logs to a child of it unless its own options give one. */
  readonly logger: Logger;
  /** The client's `prune`, which the worker runs on its retention interval. */
  readonly prune: (options: PruneOptions) => Promise<PruneResult>;
  /** The client's OpenTelemetry spans: each attempt runs in a CONSUMER span while a tracer provider is registered. */
  readonly tracing: Tracing;
}
