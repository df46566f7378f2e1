import { HISTORY } from "./status-sets.js";

// Copying history ahead of storing jobs by state: the batch migrate runs
// between migrations 027_jobs_history_copy.sql and 028_jobs_by_state.sql,
// whose headers explain the copy, its cursor and what 028 does with it.

/**
 * Copy the next $1 jobs past the cursor, in id order: the ended ones
 * (before the cutoff) into job_history_before, every idempotency key into
 * job_keys; then move the cursor past them. Each job is share-locked for
 * the batch, so a write to it comes before the batch reads it or after the
 * cursor moved (and is marked by the trigger). A job a writer holds is not
 * waited for (a writer holding several could wait on the batch in turn):
 * it is marked, to be copied at the cutover. Returns how many jobs the
 * batch covered: fewer than $1 when it reached the newest.
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

/** Whether a copy is under way: migration 027 applied, 028 not yet. */
export const historyCopyPending = `SELECT to_regclass('{{schema}}.job_history_copy') IS NOT NULL AS pending`;
