import { TERMINAL } from "../sql/status-sets.js";
import type { Routine } from "./routine.js";

/**
 * Fires for each recorded row at commit; the first call releases every
 * event recorded and clears them, the others find nothing left.
 */
export const jobsReleaseRecorded: Routine = {
  name: "jobs_release_recorded",
  sql: `
CREATE OR REPLACE FUNCTION {{schema}}.jobs_release_recorded() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  recorded text := coalesce(current_setting('conveyor.ended', true), '');
  ids uuid[];
  dirs integer[];
  bad boolean[];
BEGIN
  IF recorded = '' THEN
    RETURN NULL;
  END IF;
  PERFORM set_config('conveyor.ended', '', true);
  SELECT array_agg(split_part(e, ':', 1)::uuid ORDER BY split_part(e, ':', 1)::uuid, ord),
         array_agg(split_part(e, ':', 2)::integer ORDER BY split_part(e, ':', 1)::uuid, ord),
         array_agg(split_part(e, ':', 3) = 't' ORDER BY split_part(e, ':', 1)::uuid, ord)
    INTO ids, dirs, bad
  FROM unnest(string_to_array(rtrim(recorded, ','), ',')) WITH ORDINALITY AS r(e, ord);
  PERFORM {{schema}}.job_dependents_release(ids, dirs, bad);
  RETURN NULL;
END
$$;
DROP TRIGGER IF EXISTS jobs_release_dependents_at_commit ON {{schema}}.jobs;
CREATE CONSTRAINT TRIGGER jobs_release_dependents_at_commit AFTER UPDATE OF status ON {{schema}}.jobs
  DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW WHEN (NEW.has_dependents AND
    (OLD.status IN (${TERMINAL})) <> (NEW.status IN (${TERMINAL})))
  EXECUTE FUNCTION {{schema}}.jobs_release_recorded();`,
};
