import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import pg from "pg";
import { now } from "./clock.js";

const run = promisify(execFile);

/** The server every PostgreSQL-backed system runs against: DATABASE_URL, else the machine's PostgreSQL. */
export const SERVER_URL = process.env.DATABASE_URL ?? "postgres://root@127.0.0.1:5432/test";

/** The connection string of `database` on the bench server (or on `server`). */
export function databaseUrl(database: string, server = SERVER_URL): string {
  const url = new URL(server);
  url.pathname = `/${database}`;
  return url.toString();
}

let counter = 0;

/**
 * A fresh, empty database on the bench server (or on `server`, a URL of an
 * admin database there), dropped (with its connections) by `drop()`.
 */
export async function createDatabase(prefix: string, server = SERVER_URL): Promise<{ name: string; url: string; drop(): Promise<void> }> {
  const name = `bench_${prefix.replace(/[^a-z0-9]/gi, "_")}_${process.pid}_${++counter}`.toLowerCase();
  await admin(async (client) => {
    await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await client.query(`CREATE DATABASE ${name}`);
  }, server);
  return {
    name,
    url: databaseUrl(name, server),
    drop: () => admin((client) => client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`), server).then(() => undefined),
  };
}

async function admin<T>(action: (client: pg.Client) => Promise<T>, server = SERVER_URL): Promise<T> {
  const client = new pg.Client({ connectionString: server, application_name: "conveyor-bench" });
  await client.connect();
  try {
    return await action(client);
  } finally {
    await client.end();
  }
}

/**
 * Settle a database after a queue is filled: VACUUM and ANALYZE every table,
 * then CHECKPOINT, so that the work a fill leaves behind lands before the
 * measurement, not in it, for every system alike.
 * - ANALYZE: a table that autovacuum has not analyzed yet has no statistics,
 *   and the planner then picks plans for an empty table (measured: Conveyor's
 *   claim at 1M waiting went from 6 ms to 860 ms, sorting all 1M rows on
 *   disk, until analyzed).
 * - VACUUM: 1,000,000 inserts cross autovacuum's insert threshold, and its
 *   vacuum of the whole table then ran beside the first measured worker on
 *   this 2-core machine (Conveyor at 1M waiting: 10,900-12,300 jobs/s over
 *   three runs, against 13,800 in one run after a manual vacuum).
 * - CHECKPOINT: the fill's dirty pages are written now, not by a checkpoint
 *   during the run (skipped without the right to run it).
 */
export async function analyzeDatabase(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url, application_name: "conveyor-bench" });
  await client.connect();
  try {
    await client.query("VACUUM (ANALYZE)");
    await client.query("CHECKPOINT").catch(() => undefined);
  } finally {
    await client.end();
  }
}

/** Drop databases a crashed earlier run of the bench left behind (names start with `bench_`, owned by no live bench). */
export async function dropLeftoverDatabases(): Promise<string[]> {
  return admin(async (client) => {
    const { rows } = await client.query<{ datname: string }>("SELECT datname FROM pg_database WHERE datname LIKE 'bench\\_%'");
    const dropped: string[] = [];
    for (const { datname } of rows) {
      const pid = Number(/_(\d+)_\d+$/.exec(datname)?.[1]);
      if (Number.isInteger(pid) && pid !== process.pid && isAlive(pid)) continue;
      await client.query(`DROP DATABASE IF EXISTS ${pg.escapeIdentifier(datname)} WITH (FORCE)`);
      dropped.push(datname);
    }
    return dropped;
  });
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export interface ServerInfo {
  version: string;
  fsync: string;
  synchronousCommit: string;
}

export async function serverInfo(): Promise<ServerInfo> {
  return admin(async (client) => {
    const { rows } = await client.query(
      "SELECT current_setting('server_version') AS version, current_setting('fsync') AS fsync, current_setting('synchronous_commit') AS sc",
    );
    return { version: rows[0].version, fsync: rows[0].fsync, synchronousCommit: rows[0].sc };
  });
}

const INSERT_TABLE = `CREATE TABLE insert_limit (
  id bigserial PRIMARY KEY,
  payload jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
)`;
const INSERT_ROW = `INSERT INTO insert_limit (payload) VALUES ('{"n": 1}')`;

/**
 * The ceiling for one-at-a-time enqueue: single-row autocommit INSERTs per
 * second on one connection, each commit flushed to disk like any durable
 * enqueue. Measured with pgbench (C, no client overhead to speak of) when it
 * is installed, and with a plain `pg` loop (what a Node client can reach).
 */
export async function measureInsertLimit(seconds: number): Promise<{ pgbench: number | null; nodePg: number }> {
  const db = await createDatabase("insert");
  try {
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    let nodePg: number;
    try {
      await client.query(INSERT_TABLE);
      for (let i = 0; i < 200; i++) await client.query({ name: "insert_row", text: INSERT_ROW });
      const started = now();
      let count = 0;
      while (now() - started < seconds * 1000) {
        await client.query({ name: "insert_row", text: INSERT_ROW });
        count++;
      }
      nodePg = (count * 1000) / (now() - started);
    } finally {
      await client.end();
    }
    return { pgbench: await pgbenchInserts(db.url, seconds), nodePg };
  } finally {
    await db.drop();
  }
}

async function pgbenchInserts(url: string, seconds: number): Promise<number | null> {
  const dir = mkdtempSync(join(tmpdir(), "conveyor-bench-"));
  try {
    const script = join(dir, "insert.sql");
    writeFileSync(script, `${INSERT_ROW};\n`);
    const { stdout } = await run("pgbench", ["-n", "-c", "1", "-j", "1", "-M", "prepared", "-T", String(seconds), "-f", script, url], {
      timeout: (seconds + 30) * 1000,
    });
    const match = /tps = ([\d.]+)/.exec(stdout);
    return match ? Number(match[1]) : null;
  } catch {
    return null; // pgbench not installed, or it failed: the pg loop still gives a figure
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
