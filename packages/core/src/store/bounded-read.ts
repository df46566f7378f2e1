import { SearchTimeoutError } from "../core/errors.js";
import type { Pool, PoolClient } from "./db.js";
import { isStatementCancelled, translatePgError } from "./pg-errors.js";
import { boundedReadIndexOnly, boundedReadSettings } from "./sql/bounded-reads.js";
import { withTransaction } from "./transaction.js";

/**
 * Run `read` in a transaction of its own whose statements each stop after
 * `timeoutMs` (0: no bound), and throw `SearchTimeoutError` when one does.
 * The bound is set with SET LOCAL semantics (`set_config(…, true)`), so it
 * ends with the transaction, and behind a pooler in transaction mode it
 * stays on the one server connection the transaction runs on. A statement
 * the server cancelled leaves nothing behind: the transaction rolls back.
 */
export async function boundedRead<T>(
  pool: Pool,
  timeoutMs: number,
  read: (db: PoolClient) => Promise<T>,
  options: {
    /** Plan without sequential scans where an index serves (boundedReadIndexOnly says why). */
    throughIndexes?: boolean;
  } = {},
): Promise<T> {
  try {
    return await withTransaction(pool, async (client) => {
      try {
        await client.query(boundedReadSettings, [String(timeoutMs)]);
        if (options.throughIndexes) await client.query(boundedReadIndexOnly);
      } catch (error) {
        throw translatePgError(error);
      }
      return read(client);
    });
  } catch (error) {
    if (timeoutMs > 0 && isStatementCancelled(error)) throw new SearchTimeoutError(timeoutMs, { cause: error });
    throw error;
  }
}
