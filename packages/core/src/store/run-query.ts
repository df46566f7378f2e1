import pg from "pg";
import { STATEMENT_CONFLICT_RETRIES } from "../core/defaults.js";
import type { Queryable } from "./db.js";
import { isTransientConflict, translatePgError } from "./pg-errors.js";
import type { BoundQuery } from "./queries.js";

/**
 * Run a bound statement on Conveyor's own pool (or a client checked out of
 * it), with driver errors translated: named, and so prepared once per
 * connection, when queries.ts says so; unnamed otherwise. For the stores
 * beside `JobStore`.
 *
 * On a pool, each statement is a transaction of its own, so one the server
 * aborted for a serialization conflict or a deadlock left nothing behind
 * and is run again, up to STATEMENT_CONFLICT_RETRIES times. The conflict
 * that needs this most: a statement that locks a job another transaction
 * has just moved to another state's partition (an end, a requeue) cannot
 * follow the row there, and PostgreSQL aborts it (40001) where it would
 * otherwise have read the row again; run again, it sees the row where it
 * is now. On a client (a transaction, the caller's or Conveyor's), the
 * error is the caller's to handle: the transaction is aborted.
 */
export async function runQuery(pool: Queryable, query: BoundQuery, values: unknown[]): Promise<{ rows: any[] }> {
  for (let retry = 0; ; retry++) {
    try {
      return await runOnce(pool, query, values);
    } catch (error) {
      if (!(pool instanceof pg.Pool) || retry >= STATEMENT_CONFLICT_RETRIES || !isTransientConflict(error)) throw error;
    }
  }
}

async function runOnce(pool: Queryable, query: BoundQuery, values: unknown[]): Promise<{ rows: any[] }> {
  try {
    if (!query.prepared) return await pool.query(query.text, values);
    // pg accepts a config object with a statement name; the Queryable type does not say so.
    return await (pool as unknown as { query(config: object): ReturnType<Queryable["query"]> }).query({
      name: query.name,
      text: query.text,
      values,
    });
  } catch (error) {
    throw translatePgError(error);
  }
}
