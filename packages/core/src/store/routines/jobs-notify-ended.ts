import type { Routine } from "./routine.js";

/**
 * NOTIFY `<schema>:ended` with a job's id when it reaches a terminal state
 * and a client waits for it (a row in job_waits): the notification goes
 * out at the commit of the end, and never for an end that rolls back. A
 * job ends by moving from jobs_live into jobs_dead or job_history, so the
 * trigger is on those inserts, and fires only for jobs a wait has marked
 * (`awaited`): the end of a job nobody waited for costs a column test, not
 * a function call.
 */
export const jobsNotifyEnded: Routine = {
  name: "jobs_notify_ended",
  sql: `
CREATE OR REPLACE FUNCTION {{schema}}.jobs_notify_ended() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM {{schema}}.job_waits WHERE job_id = NEW.id) THEN
    PERFORM pg_notify(TG_TABLE_SCHEMA || ':ended', NEW.id::text);
  END IF;
  RETURN NULL;
END
$$;
CREATE OR REPLACE TRIGGER jobs_notify_ended AFTER INSERT ON {{schema}}.jobs_dead
  FOR EACH ROW WHEN (NEW.awaited) EXECUTE FUNCTION {{schema}}.jobs_notify_ended();
CREATE OR REPLACE TRIGGER jobs_notify_ended AFTER INSERT ON {{schema}}.job_history
  FOR EACH ROW WHEN (NEW.awaited) EXECUTE FUNCTION {{schema}}.jobs_notify_ended();`,
};
