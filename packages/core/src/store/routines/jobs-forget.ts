import type { Routine } from "./routine.js";

/**
 * Everything recorded about jobs that are being deleted, deleted with them:
 * executions, durable steps, batch memberships, requeues, dependency edges
 * and counts, flow membership and idempotency keys (a dead job's dead
 * letter is its own row, so it goes with it). `p_ids` are the jobs;
 * `p_depended` those of them that had dependents (the others have no edge
 * pointing at them, so their probe is skipped). Called by the delete
 * trigger (jobs_deleted) for a DELETE of any path, and by retention before
 * it drops a day of history (job_history_drop_before), which fires no
 * trigger. Each delete is one set-based statement through an index whose
 * first column is the job id. Tables rather than foreign keys: a key's
 * check would look up the job for every execution and step inserted, and
 * the parent `jobs` is partitioned, which a key cannot point at by id alone.
 */
export const jobsForget: Routine = {
  name: "jobs_forget",
  sql: `
CREATE OR REPLACE FUNCTION {{schema}}.jobs_forget(p_ids uuid[], p_depended uuid[]) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM {{schema}}.job_executions WHERE job_id = ANY(p_ids);
  DELETE FROM {{schema}}.job_steps WHERE job_id = ANY(p_ids);
  DELETE FROM {{schema}}.job_batch_members WHERE job_id = ANY(p_ids);
  DELETE FROM {{schema}}.job_requeues WHERE job_id = ANY(p_ids);
  DELETE FROM {{schema}}.job_dependencies WHERE depends_on = ANY(p_depended);
  WITH gone AS (
    DELETE FROM {{schema}}.job_dependency_state WHERE job_id = ANY(p_ids) RETURNING job_id
  )
  DELETE FROM {{schema}}.job_dependencies WHERE job_id = ANY(ARRAY(SELECT job_id FROM gone));
  DELETE FROM {{schema}}.flow_jobs WHERE job_id = ANY(p_ids);
  DELETE FROM {{schema}}.job_keys WHERE job_id = ANY(p_ids);
END
$$;`,
};
