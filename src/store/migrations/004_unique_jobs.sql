-- Unique jobs: at most one job per (tenant, unique_key) among the jobs still in
-- their chosen states. The partial unique index settles concurrent enqueues;
-- the trigger releases the key the moment a job leaves its states, on every
-- path (claim, completion, failure, cancel, reclaim, dead letter, requeue)
-- without any of those statements knowing about it.

-- The constraints are NOT VALID: the new columns are NULL in every existing
-- row, so there is nothing to check, and validating would add a scan of the
-- whole table under this statement's exclusive lock (the index below needs
-- one already). They hold for every row written from now on.
ALTER TABLE {{schema}}.jobs
  ADD COLUMN unique_key text,
  ADD COLUMN unique_states text[],
  ADD CONSTRAINT jobs_unique_key_bounded CHECK (unique_key IS NULL OR length(unique_key) BETWEEN 1 AND 255) NOT VALID,
  -- Every job starts queued, so a job that holds a key must hold it while queued.
  ADD CONSTRAINT jobs_unique_states_valid CHECK (
    unique_states IS NULL OR (
      cardinality(unique_states) >= 1
      AND unique_states <@ ARRAY['queued', 'retrying', 'running']::text[]
      AND 'queued' = ANY (unique_states))) NOT VALID,
  -- A key is held only by a job in one of its states (the trigger below keeps it so).
  ADD CONSTRAINT jobs_unique_key_held_in_state CHECK (
    unique_key IS NULL OR (unique_states IS NOT NULL AND status = ANY (unique_states))) NOT VALID;

CREATE UNIQUE INDEX jobs_unique_key_idx ON {{schema}}.jobs (tenant, unique_key)
  WHERE unique_key IS NOT NULL;

-- A released key is never taken back: a job that returns to a held state
-- (reclaimed, handed back at shutdown, requeued from the dead-letter queue)
-- could otherwise collide with the job that took the key in the meantime.
CREATE FUNCTION {{schema}}.jobs_release_unique_key() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NOT (NEW.status = ANY (NEW.unique_states)) THEN
    NEW.unique_key := NULL;
  END IF;
  RETURN NEW;
END
$$;
-- The WHEN clause keeps ordinary jobs (no key) from ever calling the function.
CREATE TRIGGER jobs_release_unique_key BEFORE UPDATE OF status ON {{schema}}.jobs
  FOR EACH ROW WHEN (NEW.unique_key IS NOT NULL)
  EXECUTE FUNCTION {{schema}}.jobs_release_unique_key();
