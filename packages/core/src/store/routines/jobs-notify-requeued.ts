import { READY } from "../sql/status-sets.js";
import type { Routine } from "./routine.js";

/**
 * Wake workers when a job becomes ready again: through an update of a live
 * job (a job handed back at shutdown, a reclaimed lease, a woken sleeper),
 * or by moving back from its end into jobs_live (a requeue from the
 * dead-letter queue, a rerun). A move shows as the row leaving jobs_dead or
 * job_history; a row deleted for good is no longer in jobs_live, and wakes
 * nobody. A succeeded job never comes back, so only cancelled ones are
 * looked at.
 */
export const jobsNotifyRequeued: Routine = {
  name: "jobs_notify_requeued",
  sql: `
CREATE OR REPLACE FUNCTION {{schema}}.jobs_notify_requeued() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  woken text;
BEGIN
  IF TG_OP = 'UPDATE' THEN
    IF NEW.run_at <= now() THEN
      PERFORM pg_notify(TG_TABLE_SCHEMA || ':jobs', NEW.queue);
    END IF;
  ELSE
    SELECT queue INTO woken FROM {{schema}}.jobs_live
    WHERE id = OLD.id AND status IN (${READY}) AND run_at <= now();
    IF FOUND THEN
      PERFORM pg_notify(TG_TABLE_SCHEMA || ':jobs', woken);
    END IF;
  END IF;
  RETURN NULL;
END
$$;
CREATE OR REPLACE TRIGGER jobs_notify_requeued AFTER UPDATE OF status ON {{schema}}.jobs_live
  FOR EACH ROW WHEN (NEW.status IN (${READY}) AND OLD.status NOT IN (${READY}))
  EXECUTE FUNCTION {{schema}}.jobs_notify_requeued();
CREATE OR REPLACE TRIGGER jobs_notify_requeued AFTER DELETE ON {{schema}}.jobs_dead
  FOR EACH ROW EXECUTE FUNCTION {{schema}}.jobs_notify_requeued();
CREATE OR REPLACE TRIGGER jobs_notify_requeued AFTER DELETE ON {{schema}}.job_history
  FOR EACH ROW WHEN (OLD.status = 'cancelled') EXECUTE FUNCTION {{schema}}.jobs_notify_requeued();`,
};
