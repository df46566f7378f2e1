-- An enqueue that Conveyor commits itself (one statement on its own pool)
-- sends its wake-up after the commit instead of inside it. PostgreSQL makes
-- every transaction that has called NOTIFY take one database-wide lock at
-- commit and hold it until the commit is on disk, so NOTIFY inside the
-- enqueue serialized concurrent enqueues behind each other's fsync: 8 clients
-- enqueuing one job at a time managed 1,567-1,940 jobs/s with it and
-- 3,969-4,609 without (PostgreSQL 15, fsync on). Such statements set
-- conveyor.wake_after_commit for their own transaction; the client then sends
-- one coalesced notification per queue (store/queue-waker.ts). Every other
-- insert (in a caller's transaction, where the job appears only at the
-- caller's commit, or by hand) still notifies at its commit, as before.
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
