import { TERMINAL } from "../sql/status-sets.js";
import type { Routine } from "./routine.js";

/**
 * A job with dependents ended, or came back from its end (a dead job
 * requeued). The row trigger records the event (job id, whether it ended or
 * came back, whether the end was a failure) in a transaction-local setting;
 * the deferred constraint trigger releases everything recorded, once, as
 * the transaction commits: the dependents of every job it ended are counted,
 * locked in id order and settled together, so two transactions that share
 * dependents wait for each other instead of deadlocking, and a batch of
 * completions pays for one release. A rollback, or a rolled-back savepoint,
 * takes its recorded events with it, as it does the setting.
 */
export const jobsReleaseDependents: Routine = {
  name: "jobs_release_dependents",
  sql: `
CREATE OR REPLACE FUNCTION {{schema}}.jobs_release_dependents() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- Rows the release itself moves are walked by its own loop.
  IF current_setting('conveyor.settling', true) = 'on' THEN
    RETURN NULL;
  END IF;
  PERFORM set_config('conveyor.ended',
    coalesce(current_setting('conveyor.ended', true), '') ||
      NEW.id::text || CASE WHEN NEW.status IN (${TERMINAL})
                           THEN CASE WHEN NEW.status = 'succeeded' THEN ':1:f,' ELSE ':1:t,' END
                           ELSE CASE WHEN OLD.status = 'succeeded' THEN ':-1:f,' ELSE ':-1:t,' END END,
    true);
  RETURN NULL;
END
$$;
CREATE OR REPLACE TRIGGER jobs_release_dependents AFTER UPDATE OF status ON {{schema}}.jobs
  FOR EACH ROW WHEN (NEW.has_dependents AND
    (OLD.status IN (${TERMINAL})) <> (NEW.status IN (${TERMINAL})))
  EXECUTE FUNCTION {{schema}}.jobs_release_dependents();`,
};
