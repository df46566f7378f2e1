import type { Routine } from "./routine.js";

/**
 * Deleting jobs, by any path (a prune, a purge, a hand-written DELETE),
 * deletes their executions in the same statement: one set-based delete per
 * statement through job_executions_job_idx. A statement trigger rather than
 * a foreign key, whose check would look up the job row for every execution
 * inserted; an execution is only ever inserted by the fenced statement that
 * has just updated its job row, so the check would guard nothing.
 */
export const jobsDeleteExecutions: Routine = {
  name: "jobs_delete_executions",
  sql: `
CREATE OR REPLACE FUNCTION {{schema}}.jobs_delete_executions() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- \`= ANY(ARRAY(…))\` so the plan is an index scan whatever the statistics
  -- (a join to the transition table could be planned as a sequential scan).
  DELETE FROM {{schema}}.job_executions WHERE job_id = ANY(ARRAY(SELECT id FROM deleted));
  RETURN NULL;
END
$$;
CREATE OR REPLACE TRIGGER jobs_delete_executions AFTER DELETE ON {{schema}}.jobs
  REFERENCING OLD TABLE AS deleted FOR EACH STATEMENT EXECUTE FUNCTION {{schema}}.jobs_delete_executions();`,
};
