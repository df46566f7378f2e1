import { resolve } from "node:path";
import pg from "pg";
import type { TestProject } from "vitest/node";
import { type EmbeddedPostgres, startEmbeddedPostgres } from "../../src/embedded/embedded-postgres.js";

declare module "vitest" {
  export interface ProvidedContext {
    /** Connection string every test file uses; see `testDatabaseUrl()`. */
    databaseUrl: string;
  }
}

/**
 * DATABASE_URL when set; otherwise an embedded server, in a data directory
 * of its own (`.conveyor/test-postgres`) so tests never touch development data.
 * Runs once per `vitest run`, before any test file.
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
  project.provide("databaseUrl", url);
  return stop;
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
