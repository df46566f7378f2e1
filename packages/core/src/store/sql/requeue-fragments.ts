// The record of a job run again with fresh attempts (job_requeues), written
// by the statement that moves the job: the dead-letter requeue, a bulk
// retry, a resume and a rerun from a step. Not a statement itself, so this
// module is not among the store's queries.

/** What a requeue records, each an SQL expression of its statement. */
export interface RequeueRecord {
  /** The action: a literal of REQUEUE_ACTION (status-sets.ts), or a CASE over them. */
  action: string;
  /** The step a rerun starts from; NULL unless given. */
  fromStep?: string;
  /** The bulk action that retried the jobs; NULL unless given. */
  bulkActionId?: string;
}

/**
 * A CTE `<name>` that records a requeue of every job `moved` returns (a CTE
 * or a parenthesized query with column `id`), at the statement's now().
 * Starts with a comma: it follows the statement's own CTEs. `schema`: the
 * tables' prefix, `{{schema}}` by default.
 */
export function recordRequeues(name: string, moved: string, record: RequeueRecord, schema = "{{schema}}"): string {
  return `, ${name} AS (
  INSERT INTO ${schema}.job_requeues (job_id, at, action, from_step, bulk_action_id)
  SELECT m.id, now(), ${record.action}, ${record.fromStep ?? "NULL"}, ${record.bulkActionId ?? "NULL"} FROM ${moved} AS m
)`;
}
