import type { Routine } from "./routine.js";

/**
 * A released key is never taken back: a job that returns to a held state
 * (reclaimed, handed back at shutdown, requeued from the dead-letter queue)
 * could otherwise collide with the job that took the key in the meantime.
 * A sleeping job is mid-run: it keeps its key wherever `running` holds one.
 */
export const jobsReleaseUniqueKey: Routine = {
  name: "jobs_release_unique_key",
  sql: `
CREATE OR REPLACE FUNCTION {{schema}}.jobs_release_unique_key() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NOT (NEW.status = ANY (NEW.unique_states) OR (NEW.status = 'sleeping' AND 'running' = ANY (NEW.unique_states))) THEN
    NEW.unique_key := NULL;
  END IF;
  RETURN NEW;
END
$$;
-- The WHEN clause keeps ordinary jobs (no key) from ever calling the function.
CREATE OR REPLACE TRIGGER jobs_release_unique_key BEFORE UPDATE OF status ON {{schema}}.jobs
  FOR EACH ROW WHEN (NEW.unique_key IS NOT NULL)
  EXECUTE FUNCTION {{schema}}.jobs_release_unique_key();`,
};
