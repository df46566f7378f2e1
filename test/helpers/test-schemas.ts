import { randomBytes } from "node:crypto";
import type pg from "pg";
import { inject } from "vitest";
import { createPool, quoteIdent } from "../../packages/core/src/store/db.js";
import { migrate } from "../../packages/core/src/store/migrate.js";
import { atFileEnd } from "./open-resources.js";

/**
 * Test schemas: their names, a migrated one made ahead of need, and which
 * to keep for inspection.
 *
 * Why schemas, not databases cloned from a migrated template: on this
 * project's 2-core machine `CREATE DATABASE … TEMPLATE` of a migrated
 * database (8 MB, mostly system catalogs) took 130 ms (PostgreSQL 15, the
 * DATABASE_URL server) and 220 ms (18, embedded) with the default WAL_LOG
 * strategy, 190-320 ms with FILE_COPY, plus 10-40 ms to drop; migrating a
 * fresh schema took 60-90 ms and dropping it 10 ms. What makes a test's
 * schema cost nothing is having migrated it earlier: each file keeps one
 * schema migrated ahead, on a connection of its own, while its tests run.
 */

/** `t_<run id>_<6 hex>`; the run id is `<seconds since 1970, base 36>_<4 hex>`. */
export const TEST_SCHEMA_NAME = /^t_([0-9a-z]+)_([0-9a-f]{4})_[0-9a-f]{6}$/;

/** A schema (or CI leftover) older than this is dropped when the next run starts, even if it was kept. */
export const KEPT_SCHEMA_MAX_AGE_MS = 24 * 60 * 60 * 1000;

/** Marks a schema kept for inspection (`COMMENT ON SCHEMA`); the run's teardown leaves such schemas alone. */
export const KEPT_COMMENT_PREFIX = "kept: ";

/** A new run id: when the run started, so leftovers can be aged, and a random part. */
export function newRunId(now = Date.now()): string {
  return `${Math.floor(now / 1000).toString(36)}_${randomBytes(2).toString("hex")}`;
}

/** A schema name no other test uses, carrying this run's id. */
export function uniqueSchemaName(runId: string = inject("testRunId")): string {
  return `t_${runId}_${randomBytes(3).toString("hex")}`;
}

/** The run id and start time of a test schema's name; undefined for any other name. */
export function parseSchemaName(name: string): { runId: string; startedAt: number } | undefined {
  const match = TEST_SCHEMA_NAME.exec(name);
  if (!match) return undefined;
  return { runId: `${match[1]}_${match[2]}`, startedAt: Number.parseInt(match[1]!, 36) * 1000 };
}

// ---------------------------------------------------------------------------
// One migrated schema made ahead of need.

let admin: pg.Pool | undefined;
let ahead: Promise<string> | undefined;

function adminPool(): pg.Pool {
  if (!admin) {
    admin = createPool({ connectionString: inject("databaseUrl"), max: 1, applicationName: "conveyor-test-schemas", queryTimeoutMs: 0 });
    atFileEnd(discardSchemaAhead);
  }
  return admin;
}

async function migrateNew(): Promise<string> {
  const schema = uniqueSchemaName();
  await migrate(adminPool(), schema);
  return schema;
}

function startAhead(): void {
  ahead = migrateNew();
  ahead.catch(() => {}); // taken (and retried) or discarded later
}

/**
 * Begin migrating a schema for this file's first test, while the file is
 * still being imported. Files that never take one drop it at the end.
 */
export function prepareSchemaAhead(): void {
  if (!ahead) startAhead();
}

/**
 * A freshly migrated schema of its own: the one made ahead if there is one,
 * and the next is started. Migrated by `migrate()`, like any application's.
 */
export async function takeMigratedSchema(): Promise<string> {
  const ready = ahead;
  startAhead();
  if (ready) {
    try {
      return await ready;
    } catch {
      // e.g. the connection dropped while the test before restarted something; make one now
    }
  }
  return migrateNew();
}

/**
 * Drop the schema made ahead that no test took, and close the connection
 * that made it. Best effort: what cannot be dropped now, the run's teardown drops.
 */
export async function discardSchemaAhead(): Promise<void> {
  const pending = ahead;
  ahead = undefined;
  if (!admin) return;
  try {
    const schema = await pending?.catch(() => undefined);
    if (schema) await admin.query(`DROP SCHEMA IF EXISTS ${quoteIdent(schema)} CASCADE`).catch(() => {});
  } finally {
    const pool = admin;
    admin = undefined;
    await pool.end();
  }
}
