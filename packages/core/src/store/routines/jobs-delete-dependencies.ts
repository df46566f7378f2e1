import type { Routine } from "./routine.js";

/**
 * Deleting jobs (a prune, a purge, by hand) deletes their edges, counts and
 * flow membership in the same statement, as their executions (jobs_delete_executions).
 */
export const jobsDeleteDependencies: Routine = {
  name: "jobs_delete_dependencies",
  sql: `
CREATE OR REPLACE FUNCTION {{schema}}.jobs_delete_dependencies() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM {{schema}}.job_dependencies WHERE depends_on = ANY(ARRAY(SELECT id FROM deleted WHERE has_dependents));
  WITH gone AS (
    DELETE FROM {{schema}}.job_dependency_state WHERE job_id = ANY(ARRAY(SELECT id FROM deleted)) RETURNING job_id
  )
  DELETE FROM {{schema}}.job_dependencies WHERE job_id = ANY(ARRAY(SELECT job_id FROM gone));
  DELETE FROM {{schema}}.flow_jobs WHERE job_id = ANY(ARRAY(SELECT id FROM deleted));
  RETURN NULL;
END
$$;
CREATE OR REPLACE TRIGGER jobs_delete_dependencies AFTER DELETE ON {{schema}}.jobs
  REFERENCING OLD TABLE AS deleted FOR EACH STATEMENT EXECUTE FUNCTION {{schema}}.jobs_delete_dependencies();`,
};
