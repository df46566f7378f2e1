import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { SchemaTooNewError } from "../core/errors.js";
import { checkOut, type Pool, quoteIdent } from "./db.js";
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
 */
export async function migrate(pool: Pool, schema: string): Promise<MigrationResult> {
  const migrations = loadMigrations();
  const latest = migrations.at(-1)?.version ?? 0;
  const quoted = quoteIdent(schema);
  const client = await checkOut(pool);
  try {
    await client.query(undeadlined("SELECT pg_advisory_lock($1, hashtext($2))", [LOCK_NAMESPACE, schema]));
    try {
      await client.query(`CREATE SCHEMA IF NOT EXISTS ${quoted}`);
      await client.query(
        `CREATE TABLE IF NOT EXISTS ${quoted}.migrations (
           version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
      );
      const { rows } = await client.query<{ version: number }>(`SELECT version FROM ${quoted}.migrations`);
      const done = new Set(rows.map((row) => row.version));
      const newest = Math.max(0, ...done);
      if (newest > latest) {
        throw new SchemaTooNewError(
          `schema ${quoted} is at migration ${newest} but this Conveyor only knows up to ${latest}; upgrade Conveyor`,
        );
      }
      const applied: number[] = [];
      for (const migration of migrations) {
        if (done.has(migration.version)) continue;
        await client.query("BEGIN");
        try {
          await client.query(undeadlined(migration.sql.replaceAll("{{schema}}", quoted)));
          await client.query(`INSERT INTO ${quoted}.migrations (version, name) VALUES ($1, $2)`, [
            migration.version,
            migration.name,
          ]);
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
