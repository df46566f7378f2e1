import type { PoolClient } from "./db.js";
import { inTransactionOn } from "./transaction.js";
import { historyCopyBatch, historyCopyLock, historyCopyMark, historyCopyRestart, historyCopyState } from "./sql/history-copy.js";

/** Each statement of a batch sees what committed before it began. */
const READ_COMMITTED = "BEGIN ISOLATION LEVEL READ COMMITTED";

/** What a hook is given: the schema, quoted, and migrate's options. */
export interface MigrationHookContext {
  client: PoolClient;
  quoted: string;
  historyCopyBatchSize: number;
  /** A statement exempt from the pool's deadline, as migrate sends its own. */
  undeadlined(text: string, values?: unknown[]): { text: string; values: unknown[] };
}

/**
 * Copy history ahead of storing jobs by state (before migration 028), in
 * batches of `historyCopyBatchSize` jobs, each in a transaction of its own
 * while workers go on, until a batch finds the newest jobs (or no copy is
 * under way). An interrupted copy resumes at its cursor; one that ran under
 * another marking function (a build before this one) starts again, once
 * every write begun under that function has committed.
 */
export async function copyHistoryAhead({ client, quoted, historyCopyBatchSize, undeadlined }: MigrationHookContext): Promise<void> {
  const sql = (text: string): string => text.replaceAll("{{schema}}", quoted);
  const [state] = (await client.query<{ pending: boolean; marked_in_order: boolean }>(sql(historyCopyState))).rows;
  if (!state?.pending) return;
  if (!state.marked_in_order) {
    await inTransactionOn(client, async () => {
      // Waits for every write begun under 027's function (the trigger's
      // swap locks jobs against writes); writes after this commit run the new one.
      await client.query(undeadlined(sql(historyCopyMark)));
      await client.query(undeadlined(sql(historyCopyRestart)));
    }, READ_COMMITTED);
  }
  const lock = sql(historyCopyLock);
  const batch = sql(historyCopyBatch);
  for (;;) {
    const looked = await inTransactionOn(client, async () => {
      await client.query(undeadlined(lock));
      const { rows } = await client.query<{ looked: number }>(undeadlined(batch, [historyCopyBatchSize]));
      return rows[0]?.looked ?? 0;
    }, READ_COMMITTED);
    if (looked < historyCopyBatchSize) return;
  }
}
