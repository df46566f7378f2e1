import type { Routine } from "./routine.js";

/**
 * Deleting jobs, by any path (a prune, a purge, a hand-written DELETE),
 * deletes their durable step records and batch memberships in the same
 * statement, as jobs_delete_executions deletes their executions: one
 * set-based delete per table and statement, each through a primary key
 * whose first column is the job id.
 */
export const jobsDeleteSteps: Routine = {
  name: "jobs_delete_steps",
  sql: `
CREATE OR REPLACE FUNCTION {{schema}}.jobs_delete_steps() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM {{schema}}.job_steps WHERE job_id = ANY(ARRAY(SELECT id FROM deleted));
  DELETE FROM {{schema}}.job_batch_members WHERE job_id = ANY(ARRAY(SELECT id FROM deleted));
  RETURN NULL;
END
$$;
CREATE OR REPLACE TRIGGER jobs_delete_steps AFTER DELETE ON {{schema}}.jobs
  REFERENCING OLD TABLE AS deleted FOR EACH STATEMENT EXECUTE FUNCTION {{schema}}.jobs_delete_steps();`,
};
