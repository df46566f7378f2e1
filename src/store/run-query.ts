import type { Queryable } from "./db.js";
import { translatePgError } from "./pg-errors.js";
import type { BoundQuery } from "./queries.js";

/**
 * Run a bound statement on Conveyor's own pool, with driver errors
 * translated: as a named (prepared) statement unless `prepare` is false. For
 * the stores beside `JobStore`. Statements with optional filters run
 * unprepared, since a generic plan would ignore which filters are set.
 */
export async function runQuery(pool: Queryable, query: BoundQuery, values: unknown[], prepare = true): Promise<{ rows: any[] }> {
  try {
    if (!prepare) return await pool.query(query.text, values);
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
