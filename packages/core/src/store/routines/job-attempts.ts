import { OUTCOME, STATE } from "../sql/status-sets.js";
import type { Routine } from "./routine.js";

/**
 * Every attempt of every job, oldest first by (started_at, id) when read for
 * one job. An attempt that did not end its job successfully is a row of
 * job_executions; the one that did lives on its job's history row
 * (sql/attempt-fragments.ts SUCCEEDED_WRITES: execution id, worker, number,
 * start and end), and the running one on its job's live row (finished_at
 * and error null, outcome running). Succeeded jobs from before the history
 * row kept its attempt have no execution id on the row, and their attempt
 * in job_executions. A filter on job_id reaches job_executions_job_idx,
 * job_history_id_idx and jobs_live's primary key. A view, not a function:
 * CREATE OR REPLACE keeps its columns.
 */
export const jobAttempts: Routine = {
  name: "job_attempts",
  sql: `
CREATE OR REPLACE VIEW {{schema}}.job_attempts AS
  SELECT e.id, e.job_id, e.attempt, e.worker_id, e.started_at, e.finished_at, e.outcome, e.error
  FROM {{schema}}.job_executions AS e
  UNION ALL
  SELECT j.current_execution_id, j.id, j.attempts, j.locked_by, j.started_at, NULL::timestamptz, ${STATE.running}::text, NULL::jsonb
  FROM {{schema}}.jobs AS j
  WHERE j.status = ${STATE.running}
  UNION ALL
  SELECT h.current_execution_id, h.id, h.attempts, h.locked_by, h.started_at, h.finished_at, ${OUTCOME.succeeded}::text, NULL::jsonb
  FROM {{schema}}.job_history AS h
  WHERE h.status = ${STATE.succeeded} AND h.current_execution_id IS NOT NULL;`,
};
