import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { HISTORY_COPY_BATCH_SIZE, HISTORY_DAYS_AHEAD } from "../core/defaults.js";
import { SchemaMismatchError, SchemaTooNewError, SchemaTooOldError } from "../core/errors.js";
import { checkOut, type Pool, type PoolClient, quoteIdent } from "./db.js";
import { ROUTINES, routineHash, type Routine } from "./routines/index.js";
import { inTransactionOn, rollback } from "./transaction.js";
import { translatePgError } from "./pg-errors.js";
import { MIGRATION_HOOKS } from "./migration-hooks.js";

/** One numbered migration file, e.g. `020_attempts_recorded_whole.sql`. */
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

/**
 * The first migration of a new schema: the tables as of its version, which
 * stands for every migration up to it. A schema whose newest migration is
 * older cannot be upgraded by this build.
 */
export const BASELINE_VERSION = 19;

/**
 * A migration's SHA-256, of its file as shipped (before the schema is put
 * in). Recorded in the ledger when it is applied: a landed migration never
 * changes, so `migrate` refuses a database whose migration of a number has
 * another name or hash than this build's file.
 */
export function migrationHash(migration: Migration): string {
  return createHash("sha256").update(migration.sql).digest("hex");
}

/**
 * Names a migration number had before the file now shipped under it, which
 * a database may still record: 019's is the last of the migrations that
 * 019_baseline.sql stands for. A ledger row under one of them is not
 * checked against the shipped file's hash.
 */
const FORMER_NAMES: Readonly<Record<number, readonly string[]>> = {
  19: ["019_attempt_on_job_row"],
};

/**
 * The ledger of applied migrations, `<schema>.migrations`: each applied
 * migration's number, file name and hash (null for a row written before
 * hashes were recorded, or by such a build; the next migrate fills it in).
 */
function ledgerTable(quoted: string): string {
  return `CREATE TABLE IF NOT EXISTS ${quoted}.migrations (
    version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now(), sha256 text)`;
}

/** The hash column, on a ledger made before hashes were recorded; checked first, so a current ledger is not locked. */
async function ledgerWithHashes(client: PoolClient, quoted: string): Promise<void> {
  const { rows } = await client.query<{ present: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = '${quoted}.migrations'::regclass AND attname = 'sha256' AND NOT attisdropped) AS present`,
  );
  if (!rows[0]?.present) await client.query(`ALTER TABLE ${quoted}.migrations ADD COLUMN IF NOT EXISTS sha256 text`);
}

/**
 * Refuse a ledger whose migration of a number this build ships has another
 * name, or another hash, than the shipped file; fill in the hashes of rows
 * that have none and the shipped name.
 */
async function checkLedger(client: PoolClient, quoted: string, migrations: readonly Migration[]): Promise<void> {
  const { rows } = await client.query<{ version: number; name: string; sha256: string | null }>(
    `SELECT version, name, sha256 FROM ${quoted}.migrations ORDER BY version`,
  );
  const shipped = new Map(migrations.map((migration) => [migration.version, migration]));
  const unhashed: Migration[] = [];
  for (const row of rows) {
    const migration = shipped.get(row.version);
    if (!migration) continue;
    if (row.name !== migration.name) {
      if (FORMER_NAMES[row.version]?.includes(row.name)) continue;
      throw new SchemaMismatchError(
        `schema ${quoted} applied migration ${row.version} as ${row.name}, but this Conveyor ships ${migration.name} under that number; the database was migrated by a build with other migrations`,
      );
    }
    if (row.sha256 === null) unhashed.push(migration);
    else if (row.sha256 !== migrationHash(migration)) {
      throw new SchemaMismatchError(
        `schema ${quoted} applied migration ${row.name} with SHA-256 ${row.sha256}, but this Conveyor's file has ${migrationHash(migration)}; the database was migrated by a build with another copy of it`,
      );
    }
  }
  if (unhashed.length > 0) {
    await client.query(
      `UPDATE ${quoted}.migrations AS m SET sha256 = h.sha256
       FROM unnest($1::int[], $2::text[]) AS h(version, sha256)
       WHERE m.version = h.version AND m.sha256 IS NULL`,
      [unhashed.map((migration) => migration.version), unhashed.map(migrationHash)],
    );
  }
}

/**
 * The ledger of installed routines, `<schema>.routines`: each function's
 * hash, and the newest migration of the build that installed it.
 */
function routinesTable(quoted: string): string {
  return `CREATE TABLE IF NOT EXISTS ${quoted}.routines (
    name text PRIMARY KEY, sha256 text NOT NULL, version integer NOT NULL, installed_at timestamptz NOT NULL DEFAULT now())`;
}

/**
 * Make job_history's day partitions for the days ahead
 * (routines/job-history-extend.ts), as every migrate does, so that a
 * schema is never left without a day for today's ends.
 */
function extendHistory(quoted: string): string {
  return `SELECT ${quoted}.job_history_extend(NULL, ${HISTORY_DAYS_AHEAD})`;
}

/** A routine's statements for one schema. */
function routineSql(routine: Routine, quoted: string): string {
  return routine.sql.replaceAll("{{schema}}", quoted);
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
  const ledger = migrations
    .map((migration) => `(${migration.version}, '${migration.name.replaceAll("'", "''")}', '${migrationHash(migration)}')`)
    .join(", ");
  const latest = migrations.at(-1)?.version ?? 0;
  const installed = ROUTINES.map((routine) => `('${routine.name}', '${routineHash(routine)}', ${latest})`).join(", ");
  const script = [
    "BEGIN",
    `CREATE SCHEMA ${quoted}`,
    ledgerTable(quoted),
    routinesTable(quoted),
    ...migrations.map((migration) => migration.sql.replaceAll("{{schema}}", quoted)),
    ...ROUTINES.map((routine) => routineSql(routine, quoted)),
    `INSERT INTO ${quoted}.migrations (version, name, sha256) VALUES ${ledger}`,
    `INSERT INTO ${quoted}.routines (name, sha256, version) VALUES ${installed}`,
    extendHistory(quoted),
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
  /** Functions, views and triggers (by routine name) installed or replaced by this call, because their text changed. */
  routines: string[];
  /** Schema version after the call. */
  version: number;
}

/**
 * Bring `schema` up to the newest migration, then install every routine
 * (src/store/routines) whose text changed. Runs under a session advisory
 * lock keyed by the schema, so any number of processes may call it at once:
 * one applies, the others wait and then find nothing to do. Each migration
 * runs in its own transaction together with its ledger row, after the
 * `before` hook it declares (migration-hooks.ts), and the routines in one
 * more; a new schema (no migration applied yet) is made in one
 * transaction, all or nothing, and runs no hook.
 *
 * `pooled`: the pool goes through a pooler in transaction mode, where a
 * session lock could be taken on one server connection and released on
 * another. Then the whole run is one transaction under a transaction-scoped
 * lock: all pending migrations and routines commit together, or none does.
 */
export async function migrate(pool: Pool, schema: string, options: MigrateOptions = {}): Promise<MigrationResult> {
  if (options.pooled) return migrateInOneTransaction(pool, schema);
  const migrations = loadMigrations();
  const latest = migrations.at(-1)?.version ?? 0;
  const quoted = quoteIdent(schema);
  const client = await checkOut(pool);
  try {
    await client.query(undeadlined("SELECT pg_advisory_lock($1, hashtext($2))", [LOCK_NAMESPACE, schema]));
    try {
      const pending = await pendingMigrations(client, quoted, migrations, latest);
      if (pending.length === migrations.length) {
        // A new schema holds nothing to keep online: all of it, routines
        // included, commits at once (one flush instead of one per file).
        const routines = await inTransactionOn(client, () => applyAll(client, quoted, pending, latest));
        return { applied: pending.map((migration) => migration.version), routines, version: latest };
      }
      const applied: number[] = [];
      for (const migration of pending) {
        await MIGRATION_HOOKS[migration.name]?.before({
          client,
          quoted,
          historyCopyBatchSize: options.historyCopyBatchSize ?? HISTORY_COPY_BATCH_SIZE,
          undeadlined,
        });
        await inTransactionOn(client, () => applyMigration(client, quoted, migration));
        applied.push(migration.version);
      }
      const routines = await inTransactionOn(client, () => installRoutines(client, quoted, latest));
      return { applied, routines, version: latest };
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
      const routines = await applyAll(client, quoted, pending, latest);
      await client.query("COMMIT");
      return { applied: pending.map((migration) => migration.version), routines, version: latest };
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

/** Options of `migrate()`. */
export interface MigrateOptions {
  /** Whether the pool goes through a pooler in transaction mode (see `migrate`). Default false. */
  pooled?: boolean;
  /** Jobs per batch of the history copied ahead of migration 028. Default HISTORY_COPY_BATCH_SIZE (5,000). */
  historyCopyBatchSize?: number;
}


/**
 * Create the schema and ledgers if needed, and list the migrations not
 * applied yet; refuse a schema newer than this code, one migrated before
 * the baseline (a new schema starts from it), or one that applied another
 * file under a number this code ships.
 */
async function pendingMigrations(client: PoolClient, quoted: string, migrations: readonly Migration[], latest: number): Promise<Migration[]> {
  await client.query(`CREATE SCHEMA IF NOT EXISTS ${quoted}`);
  await client.query(ledgerTable(quoted));
  await client.query(routinesTable(quoted));
  const { rows } = await client.query<{ version: number }>(`SELECT version FROM ${quoted}.migrations`);
  const done = new Set(rows.map((row) => row.version));
  const newest = Math.max(0, ...done);
  if (newest > latest) {
    throw new SchemaTooNewError(`schema ${quoted} is at migration ${newest} but this Conveyor only knows up to ${latest}; upgrade Conveyor`);
  }
  if (newest > 0 && newest < BASELINE_VERSION) {
    throw new SchemaTooOldError(
      `schema ${quoted} is at migration ${newest}, before this Conveyor's baseline (${BASELINE_VERSION}); migrate it to ${BASELINE_VERSION} with an earlier Conveyor first`,
    );
  }
  await ledgerWithHashes(client, quoted);
  await checkLedger(client, quoted, migrations);
  return migrations.filter((migration) => !done.has(migration.version));
}

/**
 * Install every routine whose text differs from the hash the ledger records,
 * on the caller's open transaction, and return their names. A routine
 * recorded by a build with newer migrations than this one is left as it is,
 * so an older build started during a rolling upgrade does not undo a newer
 * one's functions.
 */
async function installRoutines(client: PoolClient, quoted: string, latest: number): Promise<string[]> {
  const { rows } = await client.query<{ name: string; sha256: string; version: number }>(
    `SELECT name, sha256, version FROM ${quoted}.routines`,
  );
  const recorded = new Map(rows.map((row) => [row.name, row]));
  const changed = ROUTINES.filter((routine) => {
    const before = recorded.get(routine.name);
    return !before || (before.sha256 !== routineHash(routine) && before.version <= latest);
  });
  // Triggers go on jobs and on its partitions. A write to jobs locks the
  // parent and then the partition it reaches; creating a trigger on a
  // partition and then one on the parent would take them the other way
  // round, and deadlock with it. Locking jobs first takes the parent, then
  // every partition, in the writers' order.
  if (changed.length > 0) await client.query(undeadlined(lockJobsForTriggers(quoted)));
  const installed: string[] = [];
  for (const routine of changed) {
    const hash = routineHash(routine);
    await client.query(undeadlined(routineSql(routine, quoted)));
    await client.query(
      `INSERT INTO ${quoted}.routines (name, sha256, version) VALUES ($1, $2, $3)
       ON CONFLICT (name) DO UPDATE SET sha256 = EXCLUDED.sha256, version = EXCLUDED.version, installed_at = now()`,
      [routine.name, hash, latest],
    );
    installed.push(routine.name);
  }
  await client.query(extendHistory(quoted));
  return installed;
}

/** Lock jobs and its partitions as creating a trigger on each would, parent first. */
function lockJobsForTriggers(quoted: string): string {
  return `LOCK TABLE ${quoted}.jobs IN SHARE ROW EXCLUSIVE MODE`;
}

/**
 * Create `schema`, which must not exist, as a build that shipped only
 * `migrations` left it: each applied in order with its ledger row, and no
 * routine installed (the routines' ledger made empty first, as `migrate`
 * makes it, since later migrations write to it). For upgrade tests and
 * experiments, which start from an earlier layout and then call `migrate()`.
 */
export async function createSchemaAsOf(pool: Pool, schema: string, migrations: readonly Migration[]): Promise<void> {
  const quoted = quoteIdent(schema);
  const client = await checkOut(pool);
  try {
    await client.query(`CREATE SCHEMA ${quoted}`);
    await client.query(ledgerTable(quoted));
    await client.query(routinesTable(quoted));
    for (const migration of migrations) await applyMigration(client, quoted, migration);
  } finally {
    client.release();
  }
}

/** Every migration of `pending`, then the routines, on the caller's open transaction; returns the routines installed. */
async function applyAll(client: PoolClient, quoted: string, pending: readonly Migration[], latest: number): Promise<string[]> {
  for (const migration of pending) await applyMigration(client, quoted, migration);
  return installRoutines(client, quoted, latest);
}

/** One migration and its ledger row, on the caller's open transaction. */
async function applyMigration(client: PoolClient, quoted: string, migration: Migration): Promise<void> {
  await client.query(undeadlined(migration.sql.replaceAll("{{schema}}", quoted)));
  await client.query(`INSERT INTO ${quoted}.migrations (version, name, sha256) VALUES ($1, $2, $3)`, [
    migration.version,
    migration.name,
    migrationHash(migration),
  ]);
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
