import type { DependencyLink, DependencyOutcome, DependencyPolicy, DependencySummary } from "../core/flows.js";
import type { Job, StoredError } from "../core/model.js";
import type { JobStatus } from "../core/states.js";
import { numberArray, textArray, timestampArray } from "./array-literals.js";
import type { Queryable } from "./db.js";
import type { JobInsertRow } from "./job-insert-row.js";
import type { Queries } from "./queries.js";
import { insertedJobAt, rowToJob } from "./rows.js";
import { runQuery } from "./run-query.js";

/** A flow's row (flows table). */
export interface FlowRow {
  id: string;
  tenant: string;
  kind: "flow" | "batch";
  name: string | null;
  idempotencyKey: string | null;
  requestHash: string;
  callbackJobId: string | null;
  createdAt: Date;
}

/** An existing job that new jobs will depend on, read under its row lock. */
export interface DependencyTarget {
  id: string;
  tenant: string;
  kind: string;
  status: JobStatus;
}

/** One job of a graph insert: its row, its status at insert, and its counts when it has dependencies. */
export interface GraphJobRow {
  row: JobInsertRow;
  /** `waiting` when it has dependencies, else `queued`. */
  status: "waiting" | "queued";
  /** Another job of the call, or an existing one, depends on it. */
  hasDependents: boolean;
  /** Its name in the flow; null outside a flow. */
  node: string | null;
  /** When it runs once its dependencies have ended (see the flows table); null for a job without dependencies. */
  runIf: "all" | "any_failed" | null;
}

/** An edge: `jobId` waits for `dependsOn`. */
export interface GraphEdge {
  dependsOn: string;
  jobId: string;
  onFailure: DependencyPolicy;
}

/** A job of a flow with its name and what it depends on. */
export interface FlowJobRow {
  node: string;
  job: Job;
  dependsOn: string[];
}

/** A job's place in a flow and its dependency counts; each part null when it has none. */
export interface JobFlowState {
  flowId: string | null;
  node: string | null;
  dependencies: { pending: number; failed: number; blocking: number; blocker: string | null; runIf: "all" | "any_failed" } | null;
}

/**
 * Dependencies, flows and batches: the writes that create a graph and the
 * reads about it. Releasing dependents is the database's (routines jobs_ended, job_ends_release and job_dependents_*).
 */
export class FlowStore {
  constructor(
    private readonly pool: Queryable,
    private readonly q: Queries,
  ) {}

  /** Lock existing jobs that new jobs will depend on and mark them (sql/flows.ts dependencyTargetsLock). */
  async dependencyTargetsLock(ids: readonly string[], db: Queryable): Promise<DependencyTarget[]> {
    const { rows } = await runQuery(db, this.q.dependencyTargetsLock, [textArray(ids)]);
    return rows.map((row) => ({ id: row.id, tenant: row.tenant, kind: row.kind, status: row.status }));
  }

  /** Insert a flow's row; false when its idempotency key is already taken. */
  async flowInsert(flow: Omit<FlowRow, "createdAt">, db: Queryable): Promise<boolean> {
    const { rows } = await runQuery(db, this.q.flowInsert, [
      flow.id,
      flow.tenant,
      flow.kind,
      flow.name,
      flow.idempotencyKey,
      flow.requestHash,
      flow.callbackJobId,
    ]);
    return rows.length > 0;
  }

  async flowGetByKey(tenant: string, key: string, db: Queryable = this.pool): Promise<FlowRow | null> {
    const { rows } = await runQuery(db, this.q.flowGetByKey, [tenant, key]);
    return rows[0] ? rowToFlow(rows[0]) : null;
  }

  async flowGet(id: string, tenant: string | null, db: Queryable = this.pool): Promise<FlowRow | null> {
    const { rows } = await runQuery(db, this.q.flowGet, [id, tenant]);
    return rows[0] ? rowToFlow(rows[0]) : null;
  }

  /** Flows newest first, each with its jobs counted by status (only the statuses it has). */
  async flowList(filter: {
    tenant: string | null;
    kind: string | null;
    beforeId: string | null;
    limit: number;
  }): Promise<Array<FlowRow & { counts: Partial<Record<JobStatus, number>> }>> {
    const { rows } = await runQuery(this.pool, this.q.flowList, [filter.tenant, filter.kind, filter.beforeId, filter.limit]);
    return rows.map((row) => ({ ...rowToFlow(row), counts: row.counts ?? {} }));
  }

  /**
   * Insert a graph's jobs, names, edges and dependency counts in one
   * statement; returns the jobs written, aligned with `jobs` (null where an
   * idempotency key was already taken: nothing of that job was written), and
   * the ids of those whose counts let them move at once (for
   * jobDependentsCheck). The dependencies' rows must be locked by the
   * caller's transaction (dependencyTargetsLock).
   */
  async flowJobsInsert(
    tenant: string,
    flowId: string | null,
    jobs: readonly GraphJobRow[],
    edges: readonly GraphEdge[],
    db: Queryable,
  ): Promise<{ jobs: Array<Job | null>; settle: string[] }> {
    const rows = jobs.map((job) => job.row);
    const withState = jobs.filter((job) => job.runIf !== null);
    const { rows: inserted } = await runQuery(db, this.q.flowJobsInsert, [
      textArray(rows.map((row) => row.id)),
      tenant,
      textArray(rows.map((row) => row.queue)),
      textArray(rows.map((row) => row.kind)),
      textArray(rows.map((row) => row.payload)),
      numberArray(rows.map((row) => row.priority)),
      numberArray(rows.map((row) => row.maxAttempts)),
      timestampArray(rows.map((row) => row.runAt)),
      numberArray(rows.map((row) => row.delayMs)),
      textArray(rows.map((row) => row.idempotencyKey)),
      textArray(jobs.map((job) => job.status)),
      `{${jobs.map((job) => (job.hasDependents ? "t" : "f")).join(",")}}`,
      flowId,
      textArray(jobs.map((job) => job.node)),
      textArray(edges.map((edge) => edge.dependsOn)),
      textArray(edges.map((edge) => edge.jobId)),
      textArray(edges.map((edge) => edge.onFailure)),
      textArray(withState.map((job) => job.row.id)),
      textArray(withState.map((job) => job.runIf)),
      textArray(rows.map((row) => row.traceContext ?? null)),
      textArray(rows.map((row) => row.limitKey ?? null)),
    ]);
    const byId = new Map(inserted.map((row) => [row.id as string, row]));
    return {
      jobs: jobs.map((job) => {
        const row = byId.get(job.row.id);
        if (!row) return null;
        return { ...insertedJobAt(job.row, Number(row.created_at_ms), Number(row.run_at_ms)), status: job.status };
      }),
      settle: inserted.filter((row) => row.settle === true).map((row) => row.id as string),
    };
  }

  /** Settle new jobs whose dependencies had already ended (routine job_dependents_check). */
  async jobDependentsCheck(ids: readonly string[], db: Queryable): Promise<void> {
    await runQuery(db, this.q.jobDependentsCheck, [textArray(ids)]);
  }

  async jobGetMany(ids: readonly string[], db: Queryable = this.pool): Promise<Job[]> {
    const { rows } = await runQuery(db, this.q.jobGetMany, [textArray(ids)]);
    return rows.map(rowToJob);
  }

  async flowJobList(flowId: string, db: Queryable = this.pool): Promise<FlowJobRow[]> {
    const { rows } = await runQuery(db, this.q.flowJobList, [flowId]);
    return rows.map((row) => ({ node: row.node, job: rowToJob(row), dependsOn: row.depends_on }));
  }

  async jobDependencyLinks(jobId: string): Promise<Array<DependencyLink & { direction: "dependency" | "dependent" }>> {
    const { rows } = await runQuery(this.pool, this.q.jobDependencyLinks, [jobId]);
    return rows.map((row) => ({
      direction: row.direction,
      onFailure: row.on_failure,
      jobId: row.id,
      kind: row.kind,
      status: row.status,
      node: row.node,
    }));
  }

  async jobFlowState(jobId: string): Promise<JobFlowState> {
    const { rows } = await runQuery(this.pool, this.q.jobFlowState, [jobId]);
    const row = rows[0]!;
    return {
      flowId: row.flow_id,
      node: row.node,
      dependencies:
        row.pending === null
          ? null
          : { pending: row.pending, failed: row.failed, blocking: row.blocking, blocker: row.blocker, runIf: row.run_if },
    };
  }

  async jobDependencyOutcomes(jobId: string): Promise<DependencyOutcome[]> {
    const { rows } = await runQuery(this.pool, this.q.jobDependencyOutcomes, [jobId]);
    return rows.map((row) => ({
      jobId: row.id,
      node: row.node,
      kind: row.kind,
      status: row.status,
      result: row.result ?? null,
      error: row.last_error ?? null,
    }));
  }

  async jobDependencySummary(jobId: string): Promise<DependencySummary> {
    const { rows } = await runQuery(this.pool, this.q.jobDependencySummary, [jobId]);
    const row = rows[0]!;
    return {
      total: row.total,
      succeeded: row.succeeded,
      dead: row.dead,
      cancelled: row.cancelled,
      unfinished: row.unfinished,
      failedJobIds: row.failed_ids,
    };
  }

  /** Batch callbacks counted by `waiting`, `skipped` and `released` (sql/flows.ts flowCallbackStates), every state present. */
  async flowCallbackStates(): Promise<Record<"waiting" | "skipped" | "released", number>> {
    const { rows } = await runQuery(this.pool, this.q.flowCallbackStates, []);
    const counts = { waiting: 0, skipped: 0, released: 0 };
    for (const row of rows) counts[row.state as keyof typeof counts] = row.count;
    return counts;
  }

  /** Cancel a flow's unfinished jobs; null when there is no such flow (for this tenant). */
  async flowCancel(flowId: string, tenant: string | null): Promise<{ cancelled: number; cancelRequested: number } | null> {
    const { rows } = await runQuery(this.pool, this.q.flowCancel, [flowId, tenant]);
    const row = rows[0]!;
    if (row.found === 0) return null;
    return { cancelled: row.cancelled, cancelRequested: row.cancel_requested };
  }
}

/* eslint-disable @typescript-eslint/no-explicit-any */
function rowToFlow(row: Record<string, any>): FlowRow {
  return {
    id: row.id,
    tenant: row.tenant,
    kind: row.kind,
    name: row.name,
    idempotencyKey: row.idempotency_key,
    requestHash: row.request_hash,
    callbackJobId: row.callback_job_id,
    createdAt: row.created_at,
  };
}
