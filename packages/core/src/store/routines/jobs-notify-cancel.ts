import type { Routine } from "./routine.js";

/**
 * Tell the worker running a job that its cancel was requested, at once
 * rather than at its next heartbeat: NOTIFY `<schema>:cancel` with the
 * running attempt's execution id, once, when a running job's
 * `cancel_requested` first turns true. Every path that cancels (one job, a
 * flow, a bulk action's batch) sets the flag, so each notifies; the
 * notification goes out only when the cancel's transaction commits. The
 * heartbeat still reads the flag, for workers that do not LISTEN.
 */
export const jobsNotifyCancel: Routine = {
  name: "jobs_notify_cancel",
  sql: `
CREATE OR REPLACE FUNCTION {{schema}}.jobs_notify_cancel() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify(TG_TABLE_SCHEMA || ':cancel', NEW.current_execution_id::text);
  RETURN NULL;
END
$$;
CREATE OR REPLACE TRIGGER jobs_notify_cancel AFTER UPDATE OF cancel_requested ON {{schema}}.jobs
  FOR EACH ROW WHEN (NEW.cancel_requested AND NOT OLD.cancel_requested AND NEW.status = 'running')
  EXECUTE FUNCTION {{schema}}.jobs_notify_cancel();`,
};
