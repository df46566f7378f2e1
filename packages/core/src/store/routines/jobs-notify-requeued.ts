import { READY } from "../sql/status-sets.js";
import type { Routine } from "./routine.js";

/**
 * Wake workers when a job becomes ready again through an update (requeue from
 * the dead-letter queue, a job handed back at shutdown, a reclaimed lease).
 */
export const jobsNotifyRequeued: Routine = {
  name: "jobs_notify_requeued",
  sql: `
CREATE OR REPLACE FUNCTION {{schema}}.jobs_notify_requeued() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.run_at <= now() THEN
    PERFORM pg_notify(TG_TABLE_SCHEMA || ':jobs', NEW.queue);
  END IF;
  RETURN NULL;
END
$$;
CREATE OR REPLACE TRIGGER jobs_notify_requeued AFTER UPDATE OF status ON {{schema}}.jobs
  FOR EACH ROW WHEN (NEW.status IN (${READY}) AND OLD.status NOT IN (${READY}))
  EXECUTE FUNCTION {{schema}}.jobs_notify_requeued();`,
};
