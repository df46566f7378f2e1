import { randomBytes } from "node:crypto";
import pg from "pg";
import pino from "pino";
import { inject } from "vitest";
import { clientInternals, type ConveyorClient } from "../../src/client/conveyor-client.js";
import { Conveyor } from "../../src/conveyor.js";
import type { ConveyorOptions } from "../../src/client/options.js";
import { type ConnectionConfig, quoteIdent } from "../../src/store/db.js";
import type { JobStore } from "../../src/store/job-store.js";

/** The database every test uses: DATABASE_URL, or the embedded server the global setup started. */
export function testDatabaseUrl(): string {
  return inject("databaseUrl");
}

/** A schema name no other test uses: `t_` and 12 hex digits. */
export function uniqueSchemaName(): string {
  return `t_${randomBytes(6).toString("hex")}`;
}

export interface TestConveyor {
  conveyor: Conveyor;
  schema: string;
  /** Drop the schema and close the pool. Safe to call twice. */
  cleanup(): Promise<void>;
}

export interface TestConveyorSetup {
  /** Apply migrations before returning. Default true. */
  migrate?: boolean;
}

/**
 * A client on a fresh schema of its own, migrated, with a silent logger and
 * a small pool (files run in parallel against one server). Options override
 * these defaults; call `cleanup` in `afterAll`/`afterEach`.
 */
export async function createTestConveyor(options: Partial<ConveyorOptions> = {}, setup: TestConveyorSetup = {}): Promise<TestConveyor> {
  const schema = options.schema ?? uniqueSchemaName();
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
        await conveyor.pool.query(`DROP SCHEMA IF EXISTS ${quoteIdent(schema)} CASCADE`);
      } finally {
        await conveyor.close();
      }
    })());
  if (setup.migrate ?? true) {
    try {
      await conveyor.migrate();
    } catch (error) {
      await cleanup();
      throw error;
    }
  }
  return { conveyor, schema, cleanup };
}

/** The store behind a client (no longer a public member of Conveyor). */
export function storeOf(conveyor: ConveyorClient): JobStore {
  return clientInternals(conveyor).store;
}

/** How a client's connections are made, as a worker's claim connection is. */
export function connectionOf(conveyor: ConveyorClient): ConnectionConfig {
  return clientInternals(conveyor).connection;
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
