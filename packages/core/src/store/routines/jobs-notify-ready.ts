import type { Routine } from "./routine.js";

/**
 * Wake idle workers when ready work arrives: one notification per queue per
 * statement (a transition table), which PostgreSQL folds within a
 * transaction. A statement that sets conveyor.wake_after_commit for its own
 * transaction is left alone: Conveyor sends its wake-up after the commit
 * (store/queue-waker.ts), because a transaction that has called NOTIFY holds
 * a database-wide lock from its commit until the commit is on disk, which
 * serializes concurrent enqueues. Every other insert into jobs_live (in
 * a caller's transaction, a job brought back from its end) notifies at its
 * commit. Conveyor inserts into jobs_live itself; a row inserted by hand
 * through `jobs` fires no statement trigger of jobs_live, and is found by
 * the workers' next poll.
 */
export const jobsNotifyReady: Routine = {
  name: "jobs_notify_ready",
  sql: `
CREATE OR REPLACE FUNCTION {{schema}}.jobs_notify_ready() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF current_setting('conveyor.wake_after_commit', true) = 'on' THEN
    RETURN NULL;
  END IF;
  PERFORM pg_notify(TG_TABLE_SCHEMA || ':jobs', ready.queue)
    FROM (SELECT DISTINCT queue FROM inserted WHERE run_at <= now()) AS ready;
  RETURN NULL;
END
$$;
CREATE OR REPLACE TRIGGER jobs_notify_ready AFTER INSERT ON {{schema}}.jobs_live
  REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION {{schema}}.jobs_notify_ready();`,
};
