import { LIVE, READY, STATE } from "../sql/status-sets.js";
import type { Routine } from "./routine.js";

/**
 * A safety net for a job's state written by an UPDATE of `status`, which
 * Conveyor's own statements use only for changes within jobs_live
 * (sql/job-moves.ts moves a job between tables itself): a write by hand, or
 * by a build from before the moves were explicit. It applies what such a
 * write would otherwise skip:
 * - the unique-key rule of every state change (a key is kept only in the
 *   states it is held in, and never taken back), as job-moves.ts applies it;
 * - a job made ready wakes the workers of its queue (NOTIFY at the commit);
 * - an end or a return across tables (PostgreSQL moves the row) is followed
 *   as a moved job's is (jobs_ended);
 * - a dead job written out of `dead` leaves the dead-letter queue, as a
 *   move out of jobs_dead clears it (sql/job-moves.ts): only a dead row
 *   carries a dead letter (jobs_dead_letter_valid).
 * The WHEN clause keeps a claim or a suspension of a job with no unique key
 * from calling it.
 */
export const jobsStatusChanged: Routine = {
  name: "jobs_status_changed",
  sql: `
CREATE OR REPLACE FUNCTION {{schema}}.jobs_status_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  was_live boolean := OLD.status IN (${LIVE});
  is_live boolean := NEW.status IN (${LIVE});
BEGIN
  IF NEW.unique_key IS NOT NULL
     AND NOT (NEW.status = ANY (NEW.unique_states) OR (NEW.status = ${STATE.sleeping} AND ${STATE.running} = ANY (NEW.unique_states))) THEN
    NEW.unique_key := NULL;
  END IF;
  IF NEW.status <> ${STATE.dead} THEN
    NEW.dead_letter_id := NULL;
    NEW.dead_reason := NULL;
  END IF;
  IF was_live AND NOT is_live THEN
    PERFORM {{schema}}.jobs_ended(ARRAY[NEW.id], ARRAY[NEW.status <> ${STATE.succeeded}], ARRAY[NEW.has_dependents], ARRAY[NEW.awaited], 1, true);
  ELSIF is_live AND NOT was_live THEN
    PERFORM {{schema}}.jobs_ended(ARRAY[NEW.id], ARRAY[OLD.status <> ${STATE.succeeded}], ARRAY[NEW.has_dependents], ARRAY[false], -1, true);
  END IF;
  IF NEW.status IN (${READY}) AND OLD.status NOT IN (${READY}) AND NEW.run_at <= now() THEN
    PERFORM pg_notify(TG_TABLE_SCHEMA || ':jobs', NEW.queue);
  END IF;
  RETURN NEW;
END
$$;
CREATE OR REPLACE TRIGGER jobs_status_changed BEFORE UPDATE OF status ON {{schema}}.jobs
  FOR EACH ROW WHEN (NEW.unique_key IS NOT NULL
                     OR (OLD.status IN (${LIVE})) <> (NEW.status IN (${LIVE}))
                     OR (NEW.status IN (${READY}) AND OLD.status NOT IN (${READY}))
                     OR (OLD.dead_letter_id IS NOT NULL AND NEW.status <> ${STATE.dead}))
  EXECUTE FUNCTION {{schema}}.jobs_status_changed();`,
};
