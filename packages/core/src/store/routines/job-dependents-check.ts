import type { Routine } from "./routine.js";

/**
 * Settle jobs just inserted with dependencies that had ended before (or one
 * that blocks them had), and release what waits on them in turn.
 */
export const jobDependentsCheck: Routine = {
  name: "job_dependents_check",
  sql: `
CREATE OR REPLACE FUNCTION {{schema}}.job_dependents_check(p_jobs uuid[]) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  moved record;
BEGIN
  SELECT * INTO moved FROM {{schema}}.job_dependents_settle(p_jobs);
  PERFORM {{schema}}.job_dependents_release(moved.r_ids, moved.r_dirs, moved.r_bad);
END
$$;`,
};
