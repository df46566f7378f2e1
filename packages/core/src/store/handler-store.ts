import { checkOut, type Pool, type PoolClient, type Queryable } from "./db.js";
import type { Queries } from "./queries.js";
import { runQuery } from "./run-query.js";
import { translatePgError } from "./pg-errors.js";

/**
 * The statements a running handler causes through its context: progress
 * writes (`ctx.progress`) and transactional completion (`ctx.transaction`).
 * Kept apart from `JobStore` so the worker's hot path stays as it is.
 */
export class HandlerStore {
  constructor(
    private readonly pool: Pool,
    private readonly q: Queries,
    readonly schema: string,
  ) {}

  /** Store a running attempt's progress; false when fenced (the job is no longer this attempt's). */
  async jobProgressUpdate(jobId: string, executionId: string, progress: string): Promise<boolean> {
    const { rows } = await runQuery(this.pool, this.q.jobProgressUpdate, [jobId, executionId, progress]);
    return rows.length > 0;
  }

  /** A connection of Conveyor's pool for one transaction (guarded: see `checkOut`); the caller releases it. */
  async connect(): Promise<PoolClient> {
    try {
      return await checkOut(this.pool);
    } catch (error) {
      throw translatePgError(error);
    }
  }

  /**
   * Mark many attempts succeeded on `tx` (a batch's
   * transaction) in one statement, fenced each on its execution id (the
   * worker's own completion statement, jobComplete); returns the execution
   * ids written: fewer than given when some were fenced.
   */
  async jobCompleteManyInTransaction(tx: Queryable, items: ReadonlyArray<{ jobId: string; executionId: string; result: string | null; keep: boolean }>): Promise<string[]> {
    const { rows } = await runQuery(tx, this.q.jobComplete, [items.map((i) => i.jobId), items.map((i) => i.executionId), items.map((i) => i.result), items.map((i) => i.keep)]);
    return rows.map((row) => row.execution_id as string);
  }

  /** Record which batch each of a batch's attempts runs in (display only). */
  async jobBatchRecord(batchId: string, jobIds: readonly string[], executionIds: readonly string[]): Promise<void> {
    await runQuery(this.pool, this.q.jobBatchRecord, [batchId, jobIds, executionIds]);
  }

  /**
   * Mark an attempt succeeded on `tx`, the connection holding the
   * handler's open transaction; false when
   * fenced (then the caller must roll back).
   */
  async jobCompleteInTransaction(tx: Queryable, jobId: string, executionId: string, result: string | null, keep: boolean): Promise<boolean> {
    const { rows } = await runQuery(tx, this.q.jobCompleteInTransaction, [jobId, executionId, result, keep]);
    return rows.length > 0;
  }
}
