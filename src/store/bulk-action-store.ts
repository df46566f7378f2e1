import type { BulkAction, BulkActionFilter, BulkActionKind } from "../core/bulk-actions.js";
import type { Pool, PoolClient } from "./db.js";
import { isStatementTimeout } from "./pg-errors.js";
import type { Queries } from "./queries.js";
import { runQuery } from "./run-query.js";
import { type BuiltStatement, type BulkBatchPlan, bulkActionApply, bulkActionCandidates, bulkActionCount, bulkActionEstimate } from "./sql/bulk-action-batches.js";
import { withTransaction } from "./transaction.js";

export type { BulkBatchPlan, BulkBatchState } from "./sql/bulk-action-batches.js";

/* eslint-disable @typescript-eslint/no-explicit-any */
type Row = Record<string, any>;

/** A new operation as stored by bulkActionInsert, owned by the process that asked. */
export interface BulkActionInsertRow {
  id: string;
  tenant: string | null;
  action: BulkActionKind;
  filter: BulkActionFilter;
  priority: number | null;
  queue: string | null;
  requestedBy: string | null;
  total: number | null;
  owner: string;
  leaseMs: number;
}

/** How one batch went: `lost` when the operation is no longer this owner's (nothing was written). */
export type BulkBatchOutcome =
  | { kind: "lost" }
  | {
      kind: "ran";
      /** The operation after the batch: still running, or ended (its walk done, or cancelled). */
      operation: BulkAction;
      /** Jobs the batch changed. */
      touched: number;
    };

/** Limits of one batch. */
export interface BulkBatchLimits {
  /** Jobs per batch. */
  limit: number;
  /** The lease the batch renews, in ms. */
  leaseMs: number;
  /** The longest the batch waits for a row lock, in ms. */
  lockTimeoutMs: number;
}

function rowToBulkAction(row: Row): BulkAction {
  return {
    id: row.id,
    tenant: row.tenant,
    action: row.action,
    filter: row.filter,
    priority: row.priority,
    queue: row.queue,
    status: row.status,
    requestedBy: row.requested_by,
    total: row.total === null ? null : Number(row.total),
    touched: Number(row.touched),
    cancelRequested: row.cancel_requested,
    error: row.error,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    finishedAt: row.finished_at,
  };
}

/** Run a statement built for its values (unnamed, planned at each call). */
function runBuilt(db: Pool | PoolClient, name: string, statement: BuiltStatement): Promise<{ rows: any[] }> {
  return runQuery(db, { name, text: statement.text, prepared: false }, statement.values);
}

/**
 * Bulk action operations and their batches (statements in
 * `sql/bulk-actions.ts` and `sql/bulk-action-batches.ts`, migration 017).
 * Inputs are validated by the caller.
 */
export class BulkActionStore {
  /** The LISTEN channel of this schema's workers. */
  private readonly channel: string;

  constructor(
    private readonly pool: Pool,
    private readonly q: Queries,
    private readonly schema: string,
  ) {
    this.channel = `${schema}:jobs`;
  }

  /** Store a new operation, running and owned by `row.owner`. */
  async bulkActionInsert(row: BulkActionInsertRow): Promise<BulkAction> {
    const { rows } = await runQuery(this.pool, this.q.bulkActionInsert, [
      row.id, row.tenant, row.action, JSON.stringify(row.filter), row.priority, row.queue, row.requestedBy, row.total, row.owner, row.leaseMs,
    ]);
    return rowToBulkAction(rows[0]);
  }

  /** One operation; null when there is none (for this tenant: a tenant sees only its own). */
  async bulkActionGet(id: string, tenant: string | null): Promise<BulkAction | null> {
    const { rows } = await runQuery(this.pool, this.q.bulkActionGet, [id, tenant]);
    return rows[0] ? rowToBulkAction(rows[0]) : null;
  }

  /** Operations newest first, older than `beforeId` when given. */
  async bulkActionList(filter: { tenant: string | null; beforeId: string | null; limit: number }): Promise<BulkAction[]> {
    const { rows } = await runQuery(this.pool, this.q.bulkActionList, [filter.tenant, filter.beforeId, filter.limit]);
    return rows.map(rowToBulkAction);
  }

  /** Ask a running operation to stop (ended at once when nobody runs it); null when none is running (for this tenant). */
  async bulkActionCancel(id: string, tenant: string | null): Promise<BulkAction | null> {
    const { rows } = await runQuery(this.pool, this.q.bulkActionCancel, [id, tenant]);
    return rows[0] ? rowToBulkAction(rows[0]) : null;
  }

  /** Take over up to `limit` running operations nobody owns any more. */
  async bulkActionTakeOver(owner: string, leaseMs: number, limit: number): Promise<BulkAction[]> {
    const { rows } = await runQuery(this.pool, this.q.bulkActionTakeOver, [owner, leaseMs, limit]);
    return rows.map(rowToBulkAction);
  }

  /** Take one running operation for `owner`; null when it ended or another live owner runs it. */
  async bulkActionTake(id: string, owner: string, leaseMs: number): Promise<BulkAction | null> {
    const { rows } = await runQuery(this.pool, this.q.bulkActionTake, [id, owner, leaseMs]);
    return rows[0] ? rowToBulkAction(rows[0]) : null;
  }

  /** Let go of an operation this owner runs, leaving it running for another process to resume. */
  async bulkActionRelease(id: string, owner: string): Promise<void> {
    await runQuery(this.pool, this.q.bulkActionRelease, [id, owner]);
  }

  /** End an operation this owner runs as failed, with why; null when it is no longer this owner's. */
  async bulkActionFail(id: string, owner: string, error: string): Promise<BulkAction | null> {
    const { rows } = await runQuery(this.pool, this.q.bulkActionAdvance, [id, owner, null, 0, 0, "failed", error]);
    return rows[0] ? rowToBulkAction(rows[0]) : null;
  }

  /**
   * Run one batch of an operation `owner` runs, in one transaction: lock
   * the operation's row (fenced by the owner: `lost` when it is no longer
   * ours), end it `cancelled` if that was asked, else change the next
   * `limits.limit` jobs after its cursor and move the cursor and the count
   * on, ending it `succeeded` when fewer were left. Waits at most
   * `limits.lockTimeoutMs` for any lock (a lock_not_available error then:
   * nothing was written, try again). Queues that got ready jobs without a
   * trigger's NOTIFY are woken after the commit.
   */
  async bulkActionBatch(id: string, owner: string, plan: BulkBatchPlan, limits: BulkBatchLimits): Promise<BulkBatchOutcome> {
    let woken: string[] = [];
    const outcome = await withTransaction(this.pool, async (client): Promise<BulkBatchOutcome> => {
      await runQuery(client, this.q.transactionSetting, ["lock_timeout", `${limits.lockTimeoutMs}ms`]);
      const { rows: locked } = await runQuery(client, this.q.bulkActionLock, [id, owner]);
      if (!locked[0]) return { kind: "lost" };
      const advance = async (lastId: string | null, touched: number, status: "succeeded" | "cancelled" | null) => {
        const { rows } = await runQuery(client, this.q.bulkActionAdvance, [id, owner, lastId, touched, limits.leaseMs, status, null]);
        return rowToBulkAction(rows[0]); // the row is locked and ours: it is there
      };
      if (locked[0].cancel_requested) return { kind: "ran", operation: await advance(null, 0, "cancelled"), touched: 0 };
      let ids: string[] = [];
      if (plan.states.length > 0) {
        const candidates = bulkActionCandidates(this.schema, plan, locked[0].last_job_id, limits.limit);
        ids = (await runBuilt(client, "bulkActionCandidates", candidates)).rows.map((row) => row.id as string);
      }
      let touched = 0;
      if (ids.length > 0) {
        const { rows } = await runBuilt(client, "bulkActionApply", bulkActionApply(this.schema, plan, ids));
        touched = rows[0].touched;
        woken = rows[0].woken;
      }
      const done = ids.length < limits.limit;
      return { kind: "ran", operation: await advance(ids.at(-1) ?? null, touched, done ? "succeeded" : null), touched };
    });
    // A lost wake-up costs the workers one poll interval, never a job.
    if (woken.length > 0) await runQuery(this.pool, this.q.queuesWake, [this.channel, woken]).catch(() => {});
    return outcome;
  }

  /**
   * How many jobs the plan covers: counted when the count takes at most
   * `timeoutMs`, else the planner's estimate (a whole table may stand
   * behind a broad filter).
   */
  async bulkActionTotal(plan: BulkBatchPlan, timeoutMs: number): Promise<number> {
    if (plan.states.length === 0) return 0;
    try {
      return await withTransaction(this.pool, async (client) => {
        await runQuery(client, this.q.transactionSetting, ["statement_timeout", `${timeoutMs}ms`]);
        const { rows } = await runBuilt(client, "bulkActionCount", bulkActionCount(this.schema, plan));
        return Number(rows[0].count);
      });
    } catch (error) {
      if (!isStatementTimeout(error)) throw error;
    }
    const { rows } = await runBuilt(this.pool, "bulkActionEstimate", bulkActionEstimate(this.schema, plan));
    return Math.round(Number(rows[0]["QUERY PLAN"][0].Plan["Plan Rows"]));
  }
}
