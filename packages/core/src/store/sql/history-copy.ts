import { HISTORY } from "./status-sets.js";

// Copying history ahead of storing jobs by state: the batches that migration
// 028_jobs_by_state.sql declares to run before it (migrations/hooks.ts),
// after 027_jobs_history_copy.sql made the copy's tables. Those files'
// headers explain the copy, its cursor and what 028 does with it.
//
// A batch and a write to jobs are ordered by one advisory lock, keyed by the
// schema: every write to jobs takes it shared until its commit (the marking
// trigger), and a batch takes it exclusive before it reads. So a batch reads
// only after every write begun before it committed (an insert it could not
// see yet, with an id below the cursor it is about to set, is visible to
// it), and a write begun after it waits for the batch's commit and compares
// its job with the cursor the batch set. Without the lock, a job inserted
// while a batch was open, with an id the batch passed, and ended before it
// committed, was marked by neither.

/** The advisory lock's first key: "Copy". The second is the schema's hashtext. */
const COPY_LOCK_NAMESPACE = 0x436f7079;

/** The copy's lock, as the arguments of pg_advisory_xact_lock(_shared). */
const COPY_LOCK = `${COPY_LOCK_NAMESPACE}, hashtext('{{schema}}')`;

/** Take the copy's lock exclusive, for one batch's transaction. */
export const historyCopyLock = `SELECT pg_advisory_xact_lock(${COPY_LOCK})`;

/**
 * The marking trigger of a copy under way, in place of 027's: it points
 * 027's trigger at job_history_copy_mark_ordered, which marks a job the
 * cutover must copy again as it is then, and orders itself against a batch
 * by COPY_LOCK (027's function compared with the cursor without that
 * order). 028 drops the trigger; migration 030 drops this function.
 */
export const historyCopyMark = `
CREATE OR REPLACE FUNCTION {{schema}}.job_history_copy_mark_ordered() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_advisory_xact_lock_shared(${COPY_LOCK});
  IF TG_OP = 'INSERT' THEN
    -- A new job is copied at the cutover as live, or as one past the
    -- cursor, or marked when it is written again; one inserted already
    -- ended is marked now.
    IF NEW.status IN (${HISTORY}) THEN
      INSERT INTO {{schema}}.job_history_copy_dirty (id) VALUES (NEW.id) ON CONFLICT DO NOTHING;
    END IF;
  -- A job the cursor has passed, read in a statement of its own, after the
  -- lock: as the last batch committed it. A REPEATABLE READ or SERIALIZABLE
  -- transaction reads the cursor as of its snapshot, which a batch may have
  -- moved since: its writes are all marked.
  ELSIF current_setting('transaction_isolation') <> 'read committed'
        OR OLD.id <= (SELECT copied_to FROM {{schema}}.job_history_copy) THEN
    INSERT INTO {{schema}}.job_history_copy_dirty (id) VALUES (OLD.id) ON CONFLICT DO NOTHING;
  END IF;
  RETURN NULL;
END
$$;
DROP TRIGGER job_history_copy_mark ON {{schema}}.jobs;
CREATE TRIGGER job_history_copy_mark AFTER INSERT OR UPDATE OR DELETE ON {{schema}}.jobs
  FOR EACH ROW EXECUTE FUNCTION {{schema}}.job_history_copy_mark_ordered()`;

/**
 * Whether a copy is under way (migration 027 applied, 028 not yet), and
 * whether its trigger calls historyCopyMark's function: a copy that ran
 * under 027's starts again from the first job.
 */
export const historyCopyState = `
SELECT to_regclass('{{schema}}.job_history_copy') IS NOT NULL AS pending,
       EXISTS (SELECT 1 FROM pg_trigger WHERE tgname = 'job_history_copy_mark'
               AND tgfoid = to_regprocedure('{{schema}}.job_history_copy_mark_ordered()')) AS marked_in_order`;

/** Start the copy again from the first job: nothing copied, nothing marked. */
export const historyCopyRestart = `
DELETE FROM {{schema}}.job_history_before;
DELETE FROM {{schema}}.job_keys;
DELETE FROM {{schema}}.job_history_copy_dirty;
UPDATE {{schema}}.job_history_copy SET copied_to = '00000000-0000-0000-0000-000000000000'`;

/**
 * Copy the next $1 jobs past the cursor, in id order: the ended ones
 * (before the cutoff) into job_history_before, every idempotency key into
 * job_keys; then move the cursor past them. Runs after historyCopyLock, in
 * its transaction. Each job is share-locked for the batch, so a write to it
 * comes before the batch reads it or after the cursor moved (and is marked
 * by the trigger). A job a writer holds is not waited for (a writer that
 * began after the lock waits for the batch in turn): it is marked, to be
 * copied at the cutover. Returns how many jobs the batch covered: fewer
 * than $1 when it reached the newest.
 * $1 batch size
 */
export const historyCopyBatch = `
WITH covered AS (
  SELECT id FROM {{schema}}.jobs
  WHERE id > (SELECT copied_to FROM {{schema}}.job_history_copy)
  ORDER BY id LIMIT $1
), locked AS (
  SELECT * FROM {{schema}}.jobs WHERE id IN (SELECT id FROM covered)
  FOR SHARE SKIP LOCKED
), copied AS (
  INSERT INTO {{schema}}.job_history_before
  SELECT * FROM locked
  WHERE status IN (${HISTORY}) AND finished_at < (SELECT cutoff FROM {{schema}}.job_history_copy)
), keys AS (
  INSERT INTO {{schema}}.job_keys (tenant, idempotency_key, job_id)
  SELECT tenant, idempotency_key, id FROM locked WHERE idempotency_key IS NOT NULL
  ON CONFLICT DO NOTHING
  RETURNING job_id
), marked AS (
  -- Held by a writer; or holding a key still recorded for a job deleted
  -- since it was copied (the cutover removes that one's keys first).
  INSERT INTO {{schema}}.job_history_copy_dirty (id)
  SELECT id FROM covered WHERE id NOT IN (SELECT id FROM locked)
  UNION
  SELECT id FROM locked WHERE idempotency_key IS NOT NULL AND id NOT IN (SELECT job_id FROM keys)
  ON CONFLICT DO NOTHING
)
UPDATE {{schema}}.job_history_copy SET copied_to = (SELECT id FROM covered ORDER BY id DESC LIMIT 1)
WHERE EXISTS (SELECT 1 FROM covered)
RETURNING (SELECT count(*)::int FROM covered) AS looked`;
