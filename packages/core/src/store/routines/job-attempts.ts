import { STATE } from "../sql/status-sets.js";
import type { Routine } from "./routine.js";

/**
 * Every attempt of every job, oldest first by (started_at, id) when read for
 * one job: the ended ones from job_executions, and the running one of each
 * running job, built from its row (finished_at and error null, outcome
 * running). A filter on job_id reaches job_executions_job_idx and jobs'
 * primary key. A view, not a function: CREATE OR REPLACE keeps its columns.
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
  WHERE j.status = ${STATE.running};`,
};
