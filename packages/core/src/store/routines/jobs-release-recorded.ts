import { endTriggers } from "./ends-of-dependencies.js";
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
${endTriggers("jobs_release_dependents_at_commit", "jobs_release_recorded", true)}`,
};
