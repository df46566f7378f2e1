// The statements of a bulk action's walk, built for its filter: the WHERE
// is jobFilterCondition's (the same a search lists), ANDed with the states
// the action applies to and, per state, what is not done yet, all fixed
// fragments. Sent unnamed, so each is planned for its values.
//
// The walk goes through the matching jobs in id order, and every batch reads
// a bounded number of rows, whatever the table holds:
//
// - Survey, once at the start: per state, how many jobs match and the
//   first and last of their ids, through whatever index serves the filter.
//   The walk then runs from the first to the last, over the states with any.
// - Candidates, in each batch: the next jobs after the cursor, in id order,
//   without locks. Dead jobs have an index in id order (jobs_dead_idx,
//   jobs_dead_idx): a walk over dead jobs alone reads only them (retrying
//   100,000 dead jobs among 10 million reads 500 index entries per batch).
//   Every other state is read along the primary key, one window of rows at
//   a time (bulkActionWindowEnd): the partial indexes of those states are not
//   in id order, and a batch read through one of them would read and sort
//   all its matching entries, again at every batch. So the state tests are
//   written there so that no partial index can serve them (CASE), leaving
//   the primary key, or an index the filter itself names (an idempotency
//   key, say).
// - Apply: lock the candidates in id order, checking the filter and the
//   state again on the row as it is now (a worker may have moved it since),
//   and change only the ones that still match. Rows are locked in id order
//   so two batches never deadlock; a worker's lock makes the batch wait at
//   most the transaction's lock_timeout.

import { quoteIdent } from "../db.js";
import { cancelJobs, requeueDeadJobs } from "./job-action-fragments.js";
import { type JobFilterValues, jobFilterCondition } from "./job-filter.js";
import { recordRequeues } from "./requeue-fragments.js";
import { READY, REQUEUE_ACTION, STATE } from "./status-sets.js";

/** The actions a batch applies (core/bulk-actions.ts BulkActionKind). */
export type BulkBatchAction = "retry" | "cancel" | "purge" | "set_priority" | "move";

/** A job state (core/states.ts JobStatus). */
export type BulkBatchState = keyof typeof STATE;

/** States with an index in id order: a walk over these alone needs no window. */
const ID_ORDERED_STATES: ReadonlySet<BulkBatchState> = new Set(["dead"]);

/** True when a walk over `states` goes along the primary key one window at a time. */
export function walksInWindows(states: readonly BulkBatchState[]): boolean {
  return states.some((state) => !ID_ORDERED_STATES.has(state));
}

/** What a batch does to which jobs, checked by the client. */
export interface BulkBatchPlan {
  action: BulkBatchAction;
  /** The job filter; its `statuses` are ignored (`states` says them). */
  filter: JobFilterValues;
  /** The states to touch. Empty: nothing to do. */
  states: readonly BulkBatchState[];
  /** `set_priority`'s priority. */
  priority: number | null;
  /** `move`'s queue. */
  queue: string | null;
}

/**
 * The partitions of jobs that hold `states` (migration 028: jobs_live the
 * unfinished, jobs_dead the dead, job_history the succeeded and cancelled),
 * as a relation to read instead of `jobs`. The candidates' state tests are
 * written so that no partial index can serve them, which also keeps the
 * planner from leaving out the partitions of other states; naming the
 * partitions does, so a walk over live jobs never reads history's entries.
 */
function partitionsOf(schema: string, states: readonly BulkBatchState[]): string {
  const partitions = new Set(states.map((state) => PARTITION_OF[state]));
  const quoted = quoteIdent(schema);
  const tables = [...partitions].map((partition) => `SELECT * FROM ${quoted}.${partition}`);
  if (tables.length === 0) return `${quoted}.jobs`;
  return tables.length === 1 ? `${quoted}.${[...partitions][0]}` : `(${tables.join(" UNION ALL ")})`;
}

/** Which partition of jobs holds each state (migration 028_jobs_by_state.sql). */
const PARTITION_OF: Record<BulkBatchState, "jobs_live" | "jobs_dead" | "job_history"> = {
  waiting: "jobs_live",
  queued: "jobs_live",
  running: "jobs_live",
  retrying: "jobs_live",
  sleeping: "jobs_live",
  succeeded: "job_history",
  cancelled: "job_history",
  dead: "jobs_dead",
};

/** A statement and its values. */
export interface BuiltStatement {
  text: string;
  values: unknown[];
}

/** The nil UUID: a walk that has not started is "after" it. */
export const BEFORE_EVERY_ID = "00000000-0000-0000-0000-000000000000";

/**
 * The conditions of `plan` over alias `j`, with their values appended: the
 * filter (without its states) and, per state, the state and what is not
 * done yet. `indexable` false writes the state tests so that no partial
 * index on the state can serve them.
 */
function conditionsOf(plan: BulkBatchPlan, values: unknown[], indexable: boolean): { where: string; stateConditions: string[] } {
  const where = jobFilterCondition({ ...plan.filter, statuses: null }, values, "j");
  const param = (value: unknown, cast: string) => `$${values.push(value)}${cast}`;
  const priority = plan.action === "set_priority" ? param(plan.priority, "::smallint") : "";
  const queue = plan.action === "move" ? param(plan.queue, "::text") : "";
  const notDone = (state: BulkBatchState): string => {
    switch (plan.action) {
      case "retry":
        return state === "retrying" ? "j.run_at > now()" : "true"; // a retrying job already due is claimed as it is
      case "cancel":
        return state === "running" ? "NOT j.cancel_requested" : "true";
      case "purge":
        return "true";
      case "set_priority":
        return `j.priority <> ${priority}`;
      case "move":
        return `j.queue <> ${queue}`;
    }
  };
  const stateTest = (state: BulkBatchState) =>
    indexable ? `j.status = ${STATE[state]}` : `CASE WHEN j.status = ${STATE[state]} THEN true ELSE false END`;
  return { where, stateConditions: plan.states.map((state) => `${stateTest(state)} AND ${notDone(state)}`) };
}

/**
 * Per state of the plan, the jobs it touches now: `state`, `count`, and
 * the `first` and `last` of their ids (null when none), each state read
 * through whatever index serves it. The ids are compared as text, which
 * orders canonical UUIDs as uuid does (min and max of uuid arrive only in
 * PostgreSQL 16).
 */
export function bulkActionSurvey(schema: string, plan: BulkBatchPlan): BuiltStatement {
  const values: unknown[] = [];
  const { where, stateConditions } = conditionsOf(plan, values, true);
  const jobs = `${quoteIdent(schema)}.jobs`;
  const branches = stateConditions.map(
    (state, index) => `SELECT ${STATE[plan.states[index]!]}::text AS state, count(*)::bigint AS count, min(j.id::text) AS first, max(j.id::text) AS last
FROM ${jobs} AS j WHERE ${where} AND ${state}`,
  );
  return { text: branches.join("\nUNION ALL\n"), values };
}

/** The planner's estimate of the jobs the plan touches, for when the survey takes too long: EXPLAIN's row count, without running it. */
export function bulkActionEstimate(schema: string, plan: BulkBatchPlan): BuiltStatement {
  const values: unknown[] = [];
  const { where, stateConditions } = conditionsOf(plan, values, true);
  const jobs = `${quoteIdent(schema)}.jobs`;
  return { text: `EXPLAIN (FORMAT JSON)\n${stateConditions.map((state) => `SELECT j.id FROM ${jobs} AS j WHERE ${where} AND ${state}`).join("\nUNION ALL\n")}`, values };
}

/**
 * The ids of the next `limit` jobs the plan touches after `afterId` and up
 * to `upTo` (null: no bound), in id order. Returns column `id`. Over dead
 * jobs alone it reads jobs_dead_idx; otherwise `upTo` must bound a window
 * (bulkActionWindowEnd) and the primary key serves it.
 */
export function bulkActionCandidates(schema: string, plan: BulkBatchPlan, afterId: string, upTo: string | null, limit: number): BuiltStatement {
  const values: unknown[] = [];
  const { where, stateConditions } = conditionsOf(plan, values, !walksInWindows(plan.states));
  const after = `$${values.push(afterId)}::uuid`;
  const until = upTo === null ? "" : ` AND j.id <= $${values.push(upTo)}::uuid`;
  const max = `$${values.push(limit)}::integer`;
  const text = `SELECT j.id FROM ${partitionsOf(schema, plan.states)} AS j
WHERE ${where}
  AND (${stateConditions.map((state) => `(${state})`).join(" OR ")})
  AND j.id > ${after}${until}
ORDER BY j.id
LIMIT ${max}`;
  return { text, values };
}

/**
 * Apply the plan's action to the jobs `ids` that still match it, locking
 * them in id order; `operationId` is the bulk action's, which a retry
 * records with each job it requeues (job_requeues). Returns `touched`
 * (jobs changed or deleted) and `woken` (queues that got jobs ready to run
 * now and no NOTIFY of the trigger jobs_status_changed, to be woken after
 * the commit).
 */
export function bulkActionApply(schema: string, plan: BulkBatchPlan, ids: readonly string[], operationId: string): BuiltStatement {
  const values: unknown[] = [ids];
  const { where, stateConditions } = conditionsOf(plan, values, true);
  const quoted = quoteIdent(schema);
  const jobs = `${quoted}.jobs`;
  const target = `WITH target AS (
  SELECT j.id, j.status FROM ${jobs} AS j
  WHERE j.id = ANY($1::uuid[])
    AND ${where}
    AND (${stateConditions.map((state) => `(${state})`).join(" OR ")})
  ORDER BY j.id
  FOR UPDATE OF j
)`;
  const none = "'{}'::text[]";
  switch (plan.action) {
    case "retry": {
      // Dead jobs as deadLetterRequeue requeues one: the dead letter (on the
      // row) and the job's dependency counts go, its return re-arms what
      // waits on it, at commit, and the requeue is recorded with the operation.
      const dead = `ARRAY(SELECT id FROM target WHERE status = ${STATE.dead})`;
      const text = `${target}, released AS (
  DELETE FROM ${quoted}.job_dependency_state WHERE job_id = ANY(${dead})
)${requeueDeadJobs("requeued", quoted)}${recordRequeues("requeued_recorded", "requeued_moved", { action: REQUEUE_ACTION.bulk_retry, bulkActionId: `$${values.push(operationId)}::uuid` }, quoted)}, hastened AS (
  UPDATE ${jobs} AS j SET run_at = now(), updated_at = now()
  FROM target AS t WHERE j.id = t.id AND t.status = ${STATE.retrying}
  RETURNING j.queue
)
SELECT ((SELECT count(*) FROM requeued_moved) + (SELECT count(*) FROM hastened))::integer AS touched,
       ARRAY(SELECT DISTINCT queue FROM hastened) AS woken`;
      return { text, values };
    }
    case "cancel": {
      const text = `${target}${cancelJobs("cancelled", quoted)}
SELECT count(*)::integer AS touched, ${none} AS woken FROM cancelled_moved`;
      return { text, values };
    }
    case "purge": {
      // Executions, dependency edges and flow membership go with their jobs
      // (jobs_forget, by the trigger jobs_deleted); a dead job's dead letter is its row.
      const text = `${target}, deleted AS (
  DELETE FROM ${jobs} AS j USING target AS t WHERE j.id = t.id
  RETURNING 1
)
SELECT count(*)::integer AS touched, ${none} AS woken FROM deleted`;
      return { text, values };
    }
    case "set_priority": {
      const text = `${target}, changed AS (
  UPDATE ${jobs} AS j SET priority = $${values.push(plan.priority)}::smallint, updated_at = now()
  FROM target AS t WHERE j.id = t.id
  RETURNING 1
)
SELECT count(*)::integer AS touched, ${none} AS woken FROM changed`;
      return { text, values };
    }
    case "move": {
      const queue = `$${values.push(plan.queue)}::text`;
      const text = `${target}, changed AS (
  UPDATE ${jobs} AS j SET queue = ${queue}, updated_at = now()
  FROM target AS t WHERE j.id = t.id
  RETURNING j.status, j.run_at
)
SELECT count(*)::integer AS touched,
       CASE WHEN bool_or(status IN (${READY}) AND run_at <= now()) THEN ARRAY[${queue}] ELSE ${none} END AS woken
FROM changed`;
      return { text, values };
    }
  }
}
