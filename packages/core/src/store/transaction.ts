import { checkOut, type Pool, type PoolClient } from "./db.js";
import { isQueryTimeout, translatePgError } from "./pg-errors.js";

/**
 * Run `work` inside one transaction on a client from `pool`: committed when
 * it resolves, rolled back when it throws. Errors from `work` are rethrown
 * as they are; driver errors from connecting, BEGIN and COMMIT are translated.
 * A connection that dies meanwhile is discarded, never pooled, and never
 * crashes the process (see `checkOut`).
 */
export async function withTransaction<T>(pool: Pool, work: (client: PoolClient) => Promise<T>): Promise<T> {
  const client = await translated(() => checkOut(pool));
  let broken: unknown;
  try {
    await translated(() => client.query("BEGIN"));
    let result: T;
    try {
      result = await work(client);
    } catch (error) {
      broken = await rollback(client, error);
      throw error;
    }
    await translated(() => client.query("COMMIT"));
    return result;
  } catch (error) {
    broken ??= isQueryTimeout(error) ? error : undefined;
    throw error;
  } finally {
    client.release(broken instanceof Error ? broken : undefined);
  }
}

/**
 * `work` in a transaction of its own on a checked-out `client`, begun by
 * `begin` (e.g. `BEGIN ISOLATION LEVEL READ COMMITTED`): committed when it
 * resolves, rolled back when it throws, and its error rethrown as it is.
 */
export async function inTransactionOn<T>(client: PoolClient, work: () => Promise<T>, begin = "BEGIN"): Promise<T> {
  await client.query(begin);
  try {
    const result = await work();
    await client.query("COMMIT");
    return result;
  } catch (error) {
    await client.query("ROLLBACK");
    throw error;
  }
}

/**
 * Roll back after `cause` ended the work; returns an error when the
 * connection must be discarded. A statement that timed out is still running
 * as far as the connection knows: a ROLLBACK would queue behind it, so the
 * connection is discarded instead (the server rolls back when it closes).
 */
export async function rollback(client: PoolClient, cause: unknown): Promise<Error | undefined> {
  if (isQueryTimeout(cause)) return cause as Error;
  try {
    await client.query("ROLLBACK");
    return undefined;
  } catch (error) {
    return error as Error;
  }
}

async function translated<T>(step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (error) {
    throw translatePgError(error);
  }
}
