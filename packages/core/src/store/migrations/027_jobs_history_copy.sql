-- The online half of storing jobs by state (028_jobs_by_state.sql). 028
-- replaces `jobs` under an exclusive lock; what it would have to copy then
-- is mostly history, so the history is copied ahead, outside any long lock:
--   - job_history_before: every job that ended (succeeded or cancelled)
--     before the cutoff, the start of tomorrow (UTC). 028 attaches it as
--     job_history's partition for everything before the cutoff: its CHECK
--     and its indexes are the partition's, so attaching scans nothing and
--     builds nothing.
--   - job_history_copy: the cutoff, and the cursor: every job with an id up
--     to copied_to has been looked at. migrate advances it in batches
--     between this migration and 028 (sql/history-copy.ts), each batch a
--     transaction of its own, while workers go on.
--   - job_history_copy_dirty: jobs at or before the cursor written after
--     it passed them (a job that ended since, one requeued or deleted), and
--     jobs a batch found locked by a writer. 028 copies these again under
--     its lock, with the jobs past the cursor and the live and dead ones,
--     so the copy is exact whatever happened while it ran.
--   - job_keys: the idempotency keys of 028's layout, filled by the same
--     batches.
-- The marking trigger lives only until 028 drops it, so its function is
-- here and not among the routines: migrate installs routines after every
-- migration, and this one must act between the two.
CREATE TABLE {{schema}}.job_history_copy (
  one        boolean PRIMARY KEY DEFAULT true CHECK (one),
  cutoff     timestamptz NOT NULL,
  copied_to  uuid NOT NULL
);
INSERT INTO {{schema}}.job_history_copy (cutoff, copied_to)
VALUES (((now() AT TIME ZONE 'UTC')::date + 1)::timestamp AT TIME ZONE 'UTC', '00000000-0000-0000-0000-000000000000');

CREATE TABLE {{schema}}.job_history_copy_dirty (id uuid PRIMARY KEY);

DO $$
BEGIN
  EXECUTE format(
    'CREATE TABLE {{schema}}.job_history_before (LIKE {{schema}}.jobs INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE,
       CONSTRAINT job_history_before_bound CHECK (status IN (''succeeded'', ''cancelled'') AND finished_at IS NOT NULL AND finished_at < %L))',
    (SELECT cutoff FROM {{schema}}.job_history_copy));
END $$;
-- The indexes 028 gives job_history and jobs, so that attaching finds them.
CREATE INDEX job_history_before_id_idx ON {{schema}}.job_history_before (id);
CREATE INDEX job_history_before_finished_at_idx ON {{schema}}.job_history_before (finished_at);
CREATE INDEX job_history_before_kind_finished_at_idx ON {{schema}}.job_history_before (kind, finished_at);
CREATE INDEX job_history_before_queue_status_tenant_idx ON {{schema}}.job_history_before (queue, status, tenant);
CREATE INDEX job_history_before_tenant_idempotency_key_idx ON {{schema}}.job_history_before (tenant, idempotency_key)
  WHERE idempotency_key IS NOT NULL;

-- Idempotency keys: one row per (tenant, key) from the enqueue that
-- created the job until the job is deleted, whatever state the job moves
-- through. The primary key settles concurrent enqueues with one key.
CREATE TABLE {{schema}}.job_keys (
  tenant           text NOT NULL,
  idempotency_key  text NOT NULL,
  job_id           uuid NOT NULL,
  CONSTRAINT job_keys_pkey PRIMARY KEY (tenant, idempotency_key)
);
CREATE INDEX job_keys_job_idx ON {{schema}}.job_keys (job_id);

CREATE FUNCTION {{schema}}.job_history_copy_mark() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    -- A new job is copied at the cutover as live, or as one past the
    -- cursor; one inserted already ended, with an id the cursor may have
    -- passed while it was not yet visible, is marked.
    IF NEW.status IN ('succeeded', 'cancelled') THEN
      INSERT INTO {{schema}}.job_history_copy_dirty (id) VALUES (NEW.id) ON CONFLICT DO NOTHING;
    END IF;
  -- A job the cursor has passed. A REPEATABLE READ or SERIALIZABLE
  -- transaction reads the cursor as of its snapshot, which a batch may have
  -- moved since: its writes are all marked.
  ELSIF current_setting('transaction_isolation') <> 'read committed'
        OR OLD.id <= (SELECT copied_to FROM {{schema}}.job_history_copy) THEN
    INSERT INTO {{schema}}.job_history_copy_dirty (id) VALUES (OLD.id) ON CONFLICT DO NOTHING;
  END IF;
  RETURN NULL;
END
$$;
CREATE TRIGGER job_history_copy_mark AFTER INSERT OR UPDATE OR DELETE ON {{schema}}.jobs
  FOR EACH ROW EXECUTE FUNCTION {{schema}}.job_history_copy_mark();
