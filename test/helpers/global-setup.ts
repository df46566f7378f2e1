import { resolve } from "node:path";
import pg from "pg";
import type { TestProject } from "vitest/node";
import { type EmbeddedPostgres, startEmbeddedPostgres } from "../../packages/embedded/src/embedded-postgres.js";
import { quoteIdent } from "../../packages/core/src/store/db.js";
import { KEPT_COMMENT_PREFIX, KEPT_SCHEMA_MAX_AGE_MS, newRunId, parseSchemaName } from "./test-schemas.js";

declare module "vitest" {
  export interface ProvidedContext {
    /** Connection string every test file uses; see `testDatabaseUrl()`. */
    databaseUrl: string;
    /** Part of every test schema's name (test-schemas.ts): which run made it, and when. */
    testRunId: string;
  }
}

/**
 * DATABASE_URL when set; otherwise an embedded server, in a data directory
 * of its own (`.conveyor/test-postgres`) so tests never touch development data.
 * Runs once per `vitest run`, before any test file. Drops test schemas
 * older than a day first (kept for inspection by a failed run, or left by a
 * run that was killed), and at the end drops what this run left behind.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const fromEnvironment = process.env.DATABASE_URL;
  let stop = async (): Promise<void> => {};
  let url: string;
  if (fromEnvironment) {
    url = fromEnvironment;
  } else {
    const server = await startOwnServer(resolve(project.config.root, ".conveyor"));
    url = server.connectionString;
    stop = server.stop;
  }
  await checkReachable(url, fromEnvironment ? "DATABASE_URL" : "the embedded server");
  const runId = newRunId();
  const old = await dropTestSchemas(url, (name) => {
    const parsed = parseSchemaName(name);
    return parsed !== undefined && Date.now() - parsed.startedAt > KEPT_SCHEMA_MAX_AGE_MS;
  });
  if (old.length > 0) console.warn(`dropped ${old.length} test schema(s) older than a day: ${old.join(", ")}`);
  project.provide("databaseUrl", url);
  project.provide("testRunId", runId);
  return async () => {
    try {
      // Kept schemas stay for inspection; anything else of this run is a leftover.
      const leftovers = await dropTestSchemas(url, (name, comment) => parseSchemaName(name)?.runId === runId && !comment?.startsWith(KEPT_COMMENT_PREFIX));
      if (leftovers.length > 0) console.warn(`dropped ${leftovers.length} test schema(s) this run left behind: ${leftovers.join(", ")}`);
    } finally {
      await stop();
    }
  };
}

/**
 * Drop the test schemas (named as test-schemas.ts names them) that `select`
 * picks, given each one's name and comment (undefined when it has none: the
 * second argument is `null` in SQL). Returns the names dropped.
 */
async function dropTestSchemas(url: string, select: (name: string, comment: string | undefined) => boolean): Promise<string[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ name: string; comment: string | null }>(
      "SELECT nspname AS name, obj_description(oid, 'pg_namespace') AS comment FROM pg_namespace WHERE nspname LIKE 't\\_%'",
    );
    const dropped = rows.filter((row) => select(row.name, row.comment ?? undefined)).map((row) => row.name);
    for (const name of dropped) await client.query(`DROP SCHEMA IF EXISTS ${quoteIdent(name)} CASCADE`);
    return dropped;
  } finally {
    await client.end();
  }
}

/**
 * The process that starts an embedded server stops it when it exits. A run
 * that merely joined another run's server (two `vitest` runs in one checkout
 * at once) would lose its database when that run ends, so each run owns its
 * server: the first of these data directories that no live run is using.
 * Each is created once and reused by later runs.
 */
const DATA_DIRS = ["test-postgres", "test-postgres-2", "test-postgres-3", "test-postgres-4"];

async function startOwnServer(parent: string): Promise<EmbeddedPostgres> {
  let shared: EmbeddedPostgres | undefined;
  for (const name of DATA_DIRS) {
    const server = await startEmbeddedPostgres({ dataDir: resolve(parent, name) });
    if (server.owned) return server;
    shared ??= server;
  }
  return shared!; // more concurrent runs than directories: share, though the owner may end first
}

async function checkReachable(url: string, what: string): Promise<void> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000 });
  try {
    await client.connect();
    const { rows } = await client.query<{ version: string; number: number }>(
      "SELECT current_setting('server_version') AS version, current_setting('server_version_num')::int AS number",
    );
    if (rows[0]!.number < 140000) throw new Error(`Conveyor needs PostgreSQL 14 or newer; ${what} runs ${rows[0]!.version}`);
  } catch (error) {
    throw new Error(`cannot run the tests: ${what} is not usable: ${(error as Error).message}`, { cause: error });
  } finally {
    await client.end().catch(() => {});
  }
}
