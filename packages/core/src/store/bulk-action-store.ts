import type { BulkAction, BulkActionFilter, BulkActionKind } from "../core/bulk-actions.js";
import type { Pool, PoolClient } from "./db.js";
import { isStatementTimeout } from "./pg-errors.js";
import type { Queries } from "./queries.js";
import { runQuery } from "./run-query.js";
import {
  BEFORE_EVERY_ID,
  type BuiltStatement,
  type BulkBatchPlan,
  type BulkBatchState,
  bulkActionApply,
  bulkActionCandidates,
  bulkActionEstimate,
  bulkActionSurvey,
  walksInWindows,
} from "./sql/bulk-action-batches.js";
import { withTransaction } from "./transaction.js";

export type { BulkBatchPlan, BulkBatchState } from "./sql/bulk-action-batches.js";

/* eslint-disable @typescript-eslint/no-explicit-any */
type Row = Record<string, any>;

/** Where a walk goes, as bulkActionSurvey found at the start. */
export interface BulkWalkBounds {
  /** Jobs it touches: counted, or the planner's estimate when counting took too long. */
  total: number;
  /** The states with jobs to touch (every state of the plan when not counted). */
  states: BulkBatchState[];
  /** The cursor to start from: just before the first matching job; null: the start of the table. */
  startAfter: string | null;
  /** The last matching job; null: the end of the table. */
  until: string | null;
}

/** A new operation as stored by bulkActionInsert, owned by the process that asked. */
export interface BulkActionInsertRow {
  id: string;
  tenant: string | null;
  action: BulkActionKind;
  filter: BulkActionFilter;
  priority: number | null;
  queue: string | null;
  requestedBy: string | null;
  walk: BulkWalkBounds;
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
  /** Rows of the primary key one batch reads at most, when the walk goes along it. */
  windowRows: number;
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

/** The UUID just before `id` in UUID order (null for the nil UUID). */
function uuidBefore(id: string): string | null {
  const value = BigInt(`0x${id.replace(/-/g, "")}`);
  if (value === 0n) return null;
  const hex = (value - 1n).toString(16).padStart(32, "0");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** Run a statement built for its values (unnamed, planned at each call). */
function runBuilt(db: Pool | PoolClient, name: string, statement: BuiltStatement): Promise<{ rows: any[] }> {
  return runQuery(db, { name, text: statement.text, prepared: false }, statement.values);
}

/**
 * Bulk action operations and their batches (statements in
 * `sql/bulk-actions.ts` and `sql/bulk-action-batches.ts`).
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
    const { walk } = row;
    const { rows } = await runQuery(this.pool, this.q.bulkActionInsert, [
      row.id, row.tenant, row.action, JSON.stringify(row.filter), row.priority, row.queue, row.requestedBy, walk.total, row.owner, row.leaseMs,
      walk.states, walk.startAfter, walk.until,
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
   * `limits.limit` jobs after its cursor (within one window of the primary
   * key, for states read along it) and move the cursor and the count on,
   * ending it `succeeded` once the walk has passed its last job. Waits at
   * most `limits.lockTimeoutMs` for any lock (a lock_not_available error
   * then: nothing was written, try again). Queues that got ready jobs
   * without a trigger's NOTIFY are woken after the commit.
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
      const walk: BulkBatchPlan = { ...plan, states: locked[0].states };
      if (walk.states.length === 0) return { kind: "ran", operation: await advance(null, 0, "succeeded"), touched: 0 };
      const after: string = locked[0].last_job_id ?? BEFORE_EVERY_ID;
      // The window: up to the walk's end, or windowRows further along the primary key when that comes first.
      let upTo: string | null = locked[0].walk_until;
      let lastWindow = true;
      if (walksInWindows(walk.states)) {
        const { rows } = await runQuery(client, this.q.bulkActionWindowEnd, [after, limits.windowRows]);
        const windowEnd: string | null = rows[0]?.id ?? null;
        if (windowEnd !== null && (upTo === null || windowEnd < upTo)) {
          upTo = windowEnd;
          lastWindow = false;
        }
      }
      const ids = (await runBuilt(client, "bulkActionCandidates", bulkActionCandidates(this.schema, walk, after, upTo, limits.limit))).rows.map(
        (row) => row.id as string,
      );
      let touched = 0;
      if (ids.length > 0) {
        const { rows } = await runBuilt(client, "bulkActionApply", bulkActionApply(this.schema, walk, ids, id));
        touched = rows[0].touched;
        woken = rows[0].woken;
      }
      // A full batch may stop inside the window; a short one has passed the whole window.
      const full = ids.length === limits.limit;
      const cursor = full ? ids.at(-1)! : (upTo ?? ids.at(-1) ?? null);
      const done = !full && lastWindow;
      return { kind: "ran", operation: await advance(cursor, touched, done ? "succeeded" : null), touched };
    });
    // A lost wake-up costs the workers one poll interval, never a job.
    if (woken.length > 0) await runQuery(this.pool, this.q.queuesWake, [this.channel, woken]).catch(() => {});
    return outcome;
  }

  /**
   * Where a walk over `plan` goes: per state, the jobs it touches now, and
   * the first and last of their ids, when counting takes at most
   * `timeoutMs`; else the planner's estimate of the total and the whole
   * table (a broad filter may stand for most of it).
   */
  async bulkActionSurvey(plan: BulkBatchPlan, timeoutMs: number): Promise<BulkWalkBounds> {
    if (plan.states.length === 0) return { total: 0, states: [], startAfter: null, until: null };
    try {
      const rows = await withTransaction(this.pool, async (client) => {
        await runQuery(client, this.q.transactionSetting, ["statement_timeout", `${timeoutMs}ms`]);
        return (await runBuilt(client, "bulkActionSurvey", bulkActionSurvey(this.schema, plan))).rows;
      });
      const found = rows.filter((row) => Number(row.count) > 0);
      const firsts = found.map((row) => row.first as string).sort();
      const lasts = found.map((row) => row.last as string).sort();
      return {
        total: found.reduce((sum, row) => sum + Number(row.count), 0),
        states: plan.states.filter((state) => found.some((row) => row.state === state)),
        startAfter: firsts.length > 0 ? uuidBefore(firsts[0]!) : null,
        until: lasts.at(-1) ?? null,
      };
    } catch (error) {
      if (!isStatementTimeout(error)) throw error;
    }
    const { rows } = await runBuilt(this.pool, "bulkActionEstimate", bulkActionEstimate(this.schema, plan));
    return { total: Math.round(Number(rows[0]["QUERY PLAN"][0].Plan["Plan Rows"])), states: [...plan.states], startAfter: null, until: null };
  }
}
