import pg from "pg";
import pino from "pino";
import { inject } from "vitest";
import type { ClientContext } from "../../packages/core/src/client/client-context.js";
import type { ConveyorClient } from "../../packages/core/src/client/conveyor-client.js";
import type { DatabaseClock } from "../../packages/core/src/store/database-clock.js";
import { Conveyor } from "../../packages/core/src/conveyor.js";
import type { ConveyorOptions } from "../../packages/core/src/client/options.js";
import { type ConnectionConfig, quoteIdent } from "../../packages/core/src/store/db.js";
import type { JobStore } from "../../packages/core/src/store/job-store.js";
import type { Store } from "../../packages/core/src/store/store.js";
import { Worker } from "../../packages/core/src/worker/worker.js";
import { creationSite, currentFileName, failuresSoFar, trackResource } from "./open-resources.js";
import { KEPT_COMMENT_PREFIX, takeMigratedSchema, uniqueSchemaName } from "./test-schemas.js";

export { uniqueSchemaName };

/** The database every test uses: DATABASE_URL, or the embedded server the global setup started. */
export function testDatabaseUrl(): string {
  return inject("databaseUrl");
}

export interface TestConveyor {
  conveyor: Conveyor;
  schema: string;
  /**
   * Drop the schema and close the pool; safe to call twice. When a test of
   * this file failed while the schema existed, the schema is kept for
   * inspection instead (its name is printed); the next run drops it after a
   * day. A schema passed in `options.schema` is the caller's and is left alone.
   */
  cleanup(): Promise<void>;
}

export interface TestConveyorSetup {
  /** Apply migrations before returning. Default true. */
  migrate?: boolean;
}

/**
 * A client on a fresh schema of its own, migrated, with a silent logger and
 * a small pool (files run in parallel against one server). Options override
 * these defaults; call `cleanup` in `afterAll`/`afterEach`, or the file fails
 * (file-hooks.ts). With `options.schema` the schema is that one (the
 * caller's), migrated here unless `setup.migrate` is false; without it, a
 * schema migrated ahead of time is taken (test-schemas.ts), or a new name
 * when `migrate` is false.
 */
export async function createTestConveyor(options: Partial<ConveyorOptions> = {}, setup: TestConveyorSetup = {}): Promise<TestConveyor> {
  const migrateHere = setup.migrate ?? true;
  const schema = options.schema ?? (migrateHere ? await takeMigratedSchema() : uniqueSchemaName());
  const failuresBefore = failuresSoFar();
  const site = creationSite();
  const conveyor = new Conveyor({
    connectionString: options.pool ? undefined : testDatabaseUrl(),
    poolSize: 4,
    logger: pino({ level: "silent" }),
    ...options,
    schema,
  });
  let cleaned: Promise<void> | undefined;
  const cleanup = (): Promise<void> =>
    (cleaned ??= (async () => {
      try {
        if (options.schema !== undefined) return; // the caller's
        if (failuresSoFar() > failuresBefore) await keepSchema(conveyor, schema);
        else await conveyor.pool.query(`DROP SCHEMA IF EXISTS ${quoteIdent(schema)} CASCADE`);
      } finally {
        untrack();
        await conveyor.close();
      }
    })());
  const untrack = trackResource({
    describe: () => `createTestConveyor() at ${site} (schema ${schema}) was not cleaned up`,
    isOpen: () => cleaned === undefined,
    close: cleanup,
    owner: true,
  });
  if (migrateHere && options.schema !== undefined) {
    try {
      await conveyor.migrate();
    } catch (error) {
      await cleanup();
      throw error;
    }
  }
  return { conveyor, schema, cleanup };
}

/** Leave `schema` for inspection, marked so the run's teardown does not drop it as a leftover. */
async function keepSchema(conveyor: Conveyor, schema: string): Promise<void> {
  const why = `${KEPT_COMMENT_PREFIX}a test in ${currentFileName()} failed`;
  await conveyor.pool.query(`COMMENT ON SCHEMA ${quoteIdent(schema)} IS ${pg.escapeLiteral(why)}`).catch(() => {});
  console.warn(`kept schema ${schema} for inspection (${why}); the first run a day from now drops it`);
}

/**
 * What a client built from its options (its protected `context`: store,
 * reader, connections, tracing, bulk action runner), for tests that reach
 * below the public API.
 */
export function contextOf(conveyor: ConveyorClient): ClientContext {
  return (conveyor as unknown as { context: ClientContext }).context;
}

/** The store behind a client (no longer a public member of Conveyor). */
export function storeOf(conveyor: ConveyorClient): JobStore {
  return contextOf(conveyor).store.jobs;
}

/** The one Store behind a client: its bound statements and every entity's store. */
export function dbOf(conveyor: ConveyorClient): Store {
  return contextOf(conveyor).store;
}

/** How a client's connections are made, as a worker's claim connection is. */
export function connectionOf(conveyor: ConveyorClient): ConnectionConfig {
  return contextOf(conveyor).connection;
}

/** The database clock a client makes ids from (not public). */
export function clockOf(conveyor: ConveyorClient): DatabaseClock {
  return contextOf(conveyor).store.clock;
}

/** A single connection to the test database, for transactions and raw SQL; `end()` it when done. */
export async function connectTestClient(): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: testDatabaseUrl() });
  client.on("error", () => {}); // the server going away mid-test surfaces in the next query
  await client.connect();
  return client;
}

/** Rows in `<schema>.<table>`, optionally filtered by a raw SQL condition. */
export async function countRows(conveyor: Conveyor, table: string, where = "true", values: unknown[] = []): Promise<number> {
  const { rows } = await conveyor.pool.query<{ count: number }>(
    `SELECT count(*)::int AS count FROM ${quoteIdent(conveyor.options.schema)}.${quoteIdent(table)} WHERE ${where}`,
    values,
  );
  return rows[0]!.count;
}

// A started worker must be stopped by the test that started it. Patched on
// this file's copy of the class (modules are evaluated once per test file).
const start = Worker.prototype.start;
Worker.prototype.start = function (this: Worker) {
  const worker = this as unknown as { id: string; state: string; stop(options: { graceMs: number }): Promise<void> };
  const site = creationSite();
  trackResource({
    describe: () => `Worker ${worker.id} started at ${site} was not stopped`,
    isOpen: () => worker.state === "running" || worker.state === "stopping",
    close: () => worker.stop({ graceMs: 0 }),
    owner: true, // of its listener connection and claim pools
  });
  return start.call(this);
};
