import type { Queryable } from "./db.js";
import { translatePgError } from "./pg-errors.js";
import type { BoundQuery } from "./queries.js";

/**
 * Run a bound statement on Conveyor's own pool (or a client checked out of
 * it), with driver errors translated: named, and so prepared once per
 * connection, when queries.ts says so; unnamed otherwise. For the stores
 * beside `JobStore`.
 */
export async function runQuery(pool: Queryable, query: BoundQuery, values: unknown[]): Promise<{ rows: any[] }> {
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
