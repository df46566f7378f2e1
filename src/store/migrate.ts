import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { SchemaTooNewError } from "../core/errors.js";
import { checkOut, type Pool, type PoolClient, quoteIdent } from "./db.js";
import { rollback } from "./transaction.js";
import { translatePgError } from "./pg-errors.js";

/** One numbered migration file, e.g. `001_initial.sql`. */
export interface Migration {
  version: number;
  name: string;
  sql: string;
}

const MIGRATIONS_DIR = fileURLToPath(new URL("./migrations/", import.meta.url));

// Migrations have no deadline: a migration may rewrite a large table, and a
// process may wait for another's migrations. pg takes the pool's
// query_timeout unless a statement names its own; this is setTimeout's
// largest delay (24.8 days).
const NO_DEADLINE_MS = 2_147_483_647;

/** A statement exempt from the pool's deadline (pg reads `query_timeout`; its types do not list it). */
function undeadlined(text: string, values: unknown[] = []): { text: string; values: unknown[] } {
  const config = { text, values, query_timeout: NO_DEADLINE_MS };
  return config;
}

// Both keys of the advisory lock: a constant for "Conveyor migrations" and the schema's hash.
const LOCK_NAMESPACE = 0x436f6e76; // "Conv"

/** The migrations shipped with this version of Conveyor, in order. */
export function loadMigrations(): Migration[] {
  return readdirSync(MIGRATIONS_DIR)
    .filter((file) => /^\d+_.+\.sql$/.test(file))
    .map((file) => ({
      version: Number.parseInt(file, 10),
      name: file.replace(/\.sql$/, ""),
      sql: readFileSync(MIGRATIONS_DIR + file, "utf8"),
    }))
    .sort((a, b) => a.version - b.version);
}

/** The ledger of applied migrations, `<schema>.migrations`. */
function ledgerTable(quoted: string): string {
  return `CREATE TABLE IF NOT EXISTS ${quoted}.migrations (
    version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`;
}

/**
 * Create `schema`, which must not exist, with every migration applied, in
 * one transaction sent as one multi-statement query: for test schemas
 * (`conveyor-jobs/testing`), made many times over. The result is the schema
 * `migrate()` makes, ledger included; without its per-migration
 * transactions, its advisory lock and its round trips, it takes a fraction
 * of the time (docs/testing.md has the measurements). A name already taken
 * fails the CREATE SCHEMA, and nothing is made.
 */
export async function createMigratedSchema(pool: Pool, schema: string): Promise<void> {
  const quoted = quoteIdent(schema);
  const migrations = loadMigrations();
  const ledger = migrations.map((migration) => `(${migration.version}, '${migration.name.replaceAll("'", "''")}')`).join(", ");
  const script = [
    "BEGIN",
    `CREATE SCHEMA ${quoted}`,
    ledgerTable(quoted),
    ...migrations.map((migration) => migration.sql.replaceAll("{{schema}}", quoted)),
    `INSERT INTO ${quoted}.migrations (version, name) VALUES ${ledger}`,
    "COMMIT",
  ].join("\n;\n"); // each on lines of its own: a file that ends in a comment cannot swallow the separator
  const client = await checkOut(pool);
  try {
    await client.query(undeadlined(script));
  } catch (error) {
    await client.query("ROLLBACK").catch(() => {});
    throw translatePgError(error);
  } finally {
    client.release();
  }
}

/** What `migrate()` did. */
export interface MigrationResult {
  /** Versions applied by this call (empty when the schema was already current). */
  applied: number[];
  /** Schema version after the call. */
  version: number;
}

/**
 * Bring `schema` up to the newest migration. Runs under a session advisory
 * lock keyed by the schema, so any number of processes may call it at once:
 * one applies, the others wait and then find nothing to do. Each migration
 * runs in its own transaction together with its ledger row.
 *
 * `pooled`: the pool goes through a pooler in transaction mode, where a
 * session lock could be taken on one server connection and released on
 * another. Then the whole run is one transaction under a transaction-scoped
 * lock: all pending migrations commit together, or none does.
 */
export async function migrate(pool: Pool, schema: string, options: { pooled?: boolean } = {}): Promise<MigrationResult> {
  if (options.pooled) return migrateInOneTransaction(pool, schema);
  const migrations = loadMigrations();
  const latest = migrations.at(-1)?.version ?? 0;
  const quoted = quoteIdent(schema);
  const client = await checkOut(pool);
  try {
    await client.query(undeadlined("SELECT pg_advisory_lock($1, hashtext($2))", [LOCK_NAMESPACE, schema]));
    try {
      const pending = await pendingMigrations(client, quoted, migrations, latest);
      const applied: number[] = [];
      for (const migration of pending) {
        await client.query("BEGIN");
        try {
          await applyMigration(client, quoted, migration);
          await client.query("COMMIT");
        } catch (error) {
          await client.query("ROLLBACK");
          throw error;
        }
        applied.push(migration.version);
      }
      return { applied, version: latest };
    } finally {
      await client.query("SELECT pg_advisory_unlock($1, hashtext($2))", [LOCK_NAMESPACE, schema]);
    }
  } catch (error) {
    throw translatePgError(error);
  } finally {
    client.release();
  }
}

async function migrateInOneTransaction(pool: Pool, schema: string): Promise<MigrationResult> {
  const migrations = loadMigrations();
  const latest = migrations.at(-1)?.version ?? 0;
  const quoted = quoteIdent(schema);
  const client = await checkOut(pool);
  let broken: Error | undefined;
  try {
    await client.query("BEGIN");
    try {
      await client.query(undeadlined("SELECT pg_advisory_xact_lock($1, hashtext($2))", [LOCK_NAMESPACE, schema]));
      const pending = await pendingMigrations(client, quoted, migrations, latest);
      for (const migration of pending) await applyMigration(client, quoted, migration);
      await client.query("COMMIT");
      return { applied: pending.map((migration) => migration.version), version: latest };
    } catch (error) {
      broken = await rollback(client, error);
      throw error;
    }
  } catch (error) {
    throw translatePgError(error);
  } finally {
    client.release(broken);
  }
}

/** Create the schema and ledger if needed, and list the migrations not applied yet; refuse a schema newer than this code. */
async function pendingMigrations(client: PoolClient, quoted: string, migrations: readonly Migration[], latest: number): Promise<Migration[]> {
  await client.query(`CREATE SCHEMA IF NOT EXISTS ${quoted}`);
  await client.query(ledgerTable(quoted));
  const { rows } = await client.query<{ version: number }>(`SELECT version FROM ${quoted}.migrations`);
  const done = new Set(rows.map((row) => row.version));
  const newest = Math.max(0, ...done);
  if (newest > latest) {
    throw new SchemaTooNewError(`schema ${quoted} is at migration ${newest} but this Conveyor only knows up to ${latest}; upgrade Conveyor`);
  }
  return migrations.filter((migration) => !done.has(migration.version));
}

/** One migration and its ledger row, on the caller's open transaction. */
async function applyMigration(client: PoolClient, quoted: string, migration: Migration): Promise<void> {
  await client.query(undeadlined(migration.sql.replaceAll("{{schema}}", quoted)));
  await client.query(`INSERT INTO ${quoted}.migrations (version, name) VALUES ($1, $2)`, [migration.version, migration.name]);
}

/** What `schemaStatus()` found: the schema's version against this code's, and whether the database takes writes. */
export interface SchemaStatus {
  /** Newest migration applied to the database (0 when none). */
  current: number;
  /** Newest migration this code knows. */
  latest: number;
  /** False while the database refuses writes (a standby, or default_transaction_read_only on). */
  writable: boolean;
}

/** Where the schema stands, without changing anything (for readiness checks). */
export async function schemaStatus(db: { query: Pool["query"] }, schema: string): Promise<SchemaStatus> {
  const latest = loadMigrations().at(-1)?.version ?? 0;
  const ledger = `${quoteIdent(schema)}.migrations`;
  // Two statements: one that names a missing table fails at parse time, whatever a CASE around it says.
  const { rows: found } = await db.query<{ exists: boolean; writable: boolean }>(
    "SELECT to_regclass($1) IS NOT NULL AS exists, current_setting('transaction_read_only') = 'off' AS writable",
    [ledger],
  );
  const writable = found[0]?.writable ?? false;
  if (!found[0]?.exists) return { current: 0, latest, writable };
  const { rows } = await db.query<{ version: number }>(`SELECT coalesce(max(version), 0) AS version FROM ${ledger}`);
  return { current: rows[0]?.version ?? 0, latest, writable };
}
