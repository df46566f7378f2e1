import type { Pool, PoolClient } from "./db.js";
import { translatePgError } from "./pg-errors.js";

/**
 * Run `work` inside one transaction on a client from `pool`: committed when
 * it resolves, rolled back when it throws (the error is rethrown as is).
 */
export async function withTransaction<T>(pool: Pool, work: (client: PoolClient) => Promise<T>): Promise<T> {
  let client: PoolClient;
  try {
    client = await pool.connect();
  } catch (error) {
    throw translatePgError(error);
  }
  try {
    await client.query("BEGIN");
    const result = await work(client);
    await client.query("COMMIT");
    return result;
  } catch (error) {
    await client.query("ROLLBACK").catch(() => {});
    throw translatePgError(error);
  } finally {
    client.release();
  }
}
