import type { ConnectionConfig } from "../store/db.js";
import type { Store } from "../store/store.js";
import type { Tracing } from "../tracing/tracing.js";
import type { BulkActionRunner } from "./bulk-action-runner.js";

/**
 * What a client builds once from its options and shares with its parts and
 * with `Conveyor`, which makes workers from it: its store, where it reads,
 * its tracing and how its connections are made. Handed to each part through
 * its constructor; `Conveyor` reads it as the client's protected `context`.
 * Not exported from the package.
 */
export interface ClientContext {
  /** The client's one Store: its pool, its bound statements, its clock (job and execution ids are made from it). */
  readonly store: Store;
  /** Where lists and overviews read: a read replica's store (`readConnectionString`), else `store`. */
  readonly reader: Store;
  /** How the client's connections are made (workers open theirs the same way). */
  readonly connection: ConnectionConfig;
  /** How workers open their LISTEN connection; null when they poll (a transaction pooler without a direct URL). */
  readonly listenConnection: ConnectionConfig | null;
  /** OpenTelemetry spans of this client and its workers (src/tracing). */
  readonly tracing: Tracing;
  /** The walks of the bulk actions this client runs. */
  readonly bulkActions: BulkActionRunner;
}
