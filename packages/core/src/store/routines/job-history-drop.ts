import type { Routine } from "./routine.js";

/**
 * Retention's second step: drop a day of history that job_history_detach
 * took out of job_history, after deleting what is recorded about its jobs
 * (jobs_forget: executions, steps, keys…), which no trigger does for a
 * dropped table. A name that is not a detached day of history is refused.
 * Returns how many jobs the day held. Nothing reads the table any more,
 * so nothing waits for it.
 */
export const jobHistoryDrop: Routine = {
  name: "job_history_drop",
  sql: `
CREATE OR REPLACE FUNCTION {{schema}}.job_history_drop(p_table text) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
  n integer;
BEGIN
  IF p_table !~ '^job_history_(before_)?[0-9]{8}$' OR NOT EXISTS (
       SELECT 1 FROM pg_class WHERE oid = to_regclass(format('{{schema}}.%I', p_table)) AND NOT relispartition) THEN
    RAISE EXCEPTION 'not a detached day of job history: %', p_table;
  END IF;
  EXECUTE format('SELECT count(*)::int FROM {{schema}}.%I', p_table) INTO n;
  EXECUTE format('SELECT {{schema}}.jobs_forget(ARRAY(SELECT id FROM {{schema}}.%1$I), '
                 'ARRAY(SELECT id FROM {{schema}}.%1$I WHERE has_dependents))', p_table);
  EXECUTE format('DROP TABLE {{schema}}.%I', p_table);
  RETURN n;
END
$$;`,
};
