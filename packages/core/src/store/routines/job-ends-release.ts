import type { Routine } from "./routine.js";

/**
 * At the commit of a transaction that ended or brought back jobs with
 * dependents (rows of job_ends, recorded by jobs_ended): release them all,
 * once. The trigger fires for each recorded row; the first call takes every
 * row of its transaction and releases them together (their dependents
 * counted, locked in id order and settled: job_dependents_release), the
 * others find nothing left.
 */
export const jobEndsRelease: Routine = {
  name: "job_ends_release",
  sql: `
CREATE OR REPLACE FUNCTION {{schema}}.job_ends_release() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  v_ids uuid[];
  v_dirs integer[];
  v_bad boolean[];
BEGIN
  WITH recorded AS (
    DELETE FROM {{schema}}.job_ends AS e WHERE e.tx = pg_current_xact_id() RETURNING e.job_id, e.dir, e.bad
  )
  SELECT array_agg(r.job_id ORDER BY r.job_id, r.dir DESC), array_agg(r.dir ORDER BY r.job_id, r.dir DESC),
         array_agg(r.bad ORDER BY r.job_id, r.dir DESC)
    INTO v_ids, v_dirs, v_bad
  FROM recorded AS r;
  IF v_ids IS NOT NULL THEN
    PERFORM {{schema}}.job_dependents_release(v_ids, v_dirs, v_bad);
  END IF;
  RETURN NULL;
END
$$;
-- Deferred to the commit, so that a transaction's ends are released together, in one lock order.
DROP TRIGGER IF EXISTS job_ends_release ON {{schema}}.job_ends;
CREATE CONSTRAINT TRIGGER job_ends_release AFTER INSERT ON {{schema}}.job_ends
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION {{schema}}.job_ends_release();`,
};
