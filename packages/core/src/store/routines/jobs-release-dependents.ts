import { endTriggers } from "./ends-of-dependencies.js";
import type { Routine } from "./routine.js";

/**
 * A job with dependents ended, or came back from its end (a dead job
 * requeued). A job ends by moving from jobs_live into jobs_dead or
 * job_history, and comes back by moving out of them into jobs_live, so the
 * row trigger is on those two partitions: an insert is an end; a delete
 * whose row is in jobs_live again is a return (a row deleted for good is
 * not, and its edges go with it, jobs_forget). The trigger records the
 * event (job id, whether it ended or came back, whether the end was a
 * failure) in a transaction-local setting; the deferred constraint trigger
 * jobs_release_dependents_at_commit releases everything recorded, once, as
 * the transaction commits: the dependents of every job it ended are
 * counted, locked in id order and settled together, so two transactions
 * that share dependents wait for each other instead of deadlocking, and a
 * batch of completions pays for one release. A rollback, or a rolled-back
 * savepoint, takes its recorded events with it, as it does the setting.
 */
export const jobsReleaseDependents: Routine = {
  name: "jobs_release_dependents",
  sql: `
CREATE OR REPLACE FUNCTION {{schema}}.jobs_release_dependents() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  event text;
BEGIN
  -- Rows the release itself moves are walked by its own loop.
  IF current_setting('conveyor.settling', true) = 'on' THEN
    RETURN NULL;
  END IF;
  IF TG_OP = 'INSERT' THEN
    event := NEW.id::text || CASE WHEN NEW.status = 'succeeded' THEN ':1:f,' ELSE ':1:t,' END;
  ELSIF EXISTS (SELECT 1 FROM {{schema}}.jobs_live WHERE id = OLD.id) THEN
    event := OLD.id::text || CASE WHEN OLD.status = 'succeeded' THEN ':-1:f,' ELSE ':-1:t,' END;
  ELSE
    RETURN NULL;
  END IF;
  PERFORM set_config('conveyor.ended', coalesce(current_setting('conveyor.ended', true), '') || event, true);
  RETURN NULL;
END
$$;
${endTriggers("jobs_release_dependents", "jobs_release_dependents", false)}`,
};
