import type { Pool, PoolClient } from "./db.js";
import { translatePgError } from "./pg-errors.js";

/**
 * Run `work` inside one transaction on a client from `pool`: committed when
 * it resolves, rolled back when it throws. Errors from `work` are rethrown
 * as they are; driver errors from connecting, BEGIN and COMMIT are translated.
 */
export async function withTransaction<T>(pool: Pool, work: (client: PoolClient) => Promise<T>): Promise<T> {
  const client = await translated(() => pool.connect());
  try {
    await translated(() => client.query("BEGIN"));
    let result: T;
    try {
      result = await work(client);
    } catch (error) {
      await client.query("ROLLBACK").catch(() => {});
      throw error;
    }
    await translated(() => client.query("COMMIT"));
    return result;
  } finally {
    client.release();
  }
}

async function translated<T>(step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (error) {
    throw translatePgError(error);
  }
}
