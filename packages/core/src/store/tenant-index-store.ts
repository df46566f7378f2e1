import type { Pool, Queryable } from "./db.js";
import type { Queries } from "./queries.js";
import { runQuery } from "./run-query.js";
import { withTransaction } from "./transaction.js";

/**
 * Make sure the tenant-fair claim's index exists (sql/tenant-index.ts): a catalog
 * read when it does, the only case on every start but the first; else built
 * under an advisory lock, so any number of workers may start at once.
 * Resolves true when this call built it.
 */
export async function tenantIndexEnsure(pool: Pool, q: Queries, schema: string): Promise<boolean> {
  const present = async (db: Queryable) =>
    (await runQuery(db, q.tenantIndexExists, [schema])).rows[0].present as boolean;
  if (await present(pool)) return false;
  return withTransaction(pool, async (client) => {
    await runQuery(client, q.tenantIndexLock, [schema]);
    if (await present(client)) return false; // built by another process while we waited
    await runQuery(client, q.tenantIndexCreate, []);
    return true;
  });
}
