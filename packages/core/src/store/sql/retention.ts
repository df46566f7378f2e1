// Retention: delete finished jobs and old dead letters in small batches.
//
// How a prune finds old rows without scanning the table: a partial index on
// finished_at over succeeded and cancelled jobs (jobs_finished_prune_idx), read oldest first, and an index on dead_letter_jobs.dead_at.
// Measured on PostgreSQL 15 (random_page_cost 1.1, as Conveyor's pools set),
// 200,000 finished jobs over 14 days, 100,000 dead, 5,000 queued:
//   - a batch of 1,000 old rows found and locked: 2.1 ms;
//   - a sweep with nothing left to prune: 0.03 ms; without an index it is a
//     sequential scan of every remaining row, 55 ms at 104,000 rows, every
//     sweep on every worker, growing with the table.
// The cost is one more B-tree insert per completion and cancel (the
// completion UPDATE is never HOT anyway: it changes status, which the ready
// indexes name, so it already writes a new pkey entry). 100,000 completions in
// batches of 500, with and without the index, interleaved three times: 2.5,
// 2.0, 1.9 s against 3.1, 2.1, 2.0 s; the difference is lost in the noise of a
// shared machine. The index holds only finished jobs, 4.4 MB for 100,000 rows.
// Considered and rejected:
//   - walking the primary key below the smallest UUIDv7 of the cutoff (ids
//     carry their enqueue time; no extra index): as fast when the range holds
//     only prunable rows, but every sweep re-reads each row enqueued before
//     the cutoff that must stay (dead jobs kept 30 days, jobs scheduled far
//     ahead: 45 ms for 100,000 kept dead jobs), and it trusts the enqueuing
//     host's clock where finished_at is the database's.
//   - BRIN on finished_at: nearly free to keep, but updated rows land wherever
//     there is free space, so finished_at soon stops following the physical
//     order and each range covers most of the table.
//
// Both statements lock their rows with SKIP LOCKED, so any number of workers
// may prune at once: each row is deleted by exactly one of them, none waits.
// Executions go with their job through the jobs_delete_executions statement
// trigger (routines/jobs-delete-executions.ts), found by job_executions_job_idx; a dead job's
// dead-letter entry through its ON DELETE CASCADE key.

/**
 * Delete up to $2 succeeded or cancelled jobs that finished more than $1 ms
 * ago (by the database clock), oldest first, with their executions, except
 * jobs of the kinds $3 (those with an age of their own, pruned by
 * jobPruneFinishedOfKind); returns how many.
 * $1 age ms float8, $2 limit, $3 kinds left out text[]
 */
export const jobPruneFinished = `
WITH target AS (
  SELECT id FROM {{schema}}.jobs
  WHERE status IN ('succeeded', 'cancelled')
    AND finished_at < now() - $1::float8 * interval '1 millisecond'
    AND kind <> ALL($3::text[])
  ORDER BY finished_at
  LIMIT $2
  FOR UPDATE SKIP LOCKED
), pruned AS (
  DELETE FROM {{schema}}.jobs WHERE id = ANY(ARRAY(SELECT id FROM target)) RETURNING 1
)
SELECT count(*)::int AS count FROM pruned`;

/**
 * Delete up to $2 succeeded or cancelled jobs of kind $3 that finished more
 * than $1 ms ago, oldest first, with their executions, through
 * jobs_finished_by_kind_idx (only that kind's rows past its age are read);
 * returns how many.
 * $1 age ms float8, $2 limit, $3 kind
 */
export const jobPruneFinishedOfKind = `
WITH target AS (
  SELECT id FROM {{schema}}.jobs
  WHERE status IN ('succeeded', 'cancelled') AND kind = $3
    AND finished_at < now() - $1::float8 * interval '1 millisecond'
  ORDER BY finished_at
  LIMIT $2
  FOR UPDATE SKIP LOCKED
), pruned AS (
  DELETE FROM {{schema}}.jobs WHERE id = ANY(ARRAY(SELECT id FROM target)) RETURNING 1
)
SELECT count(*)::int AS count FROM pruned`;

/**
 * Delete up to $2 flows created more than $1 ms ago whose jobs are all gone
 * (pruned or purged), oldest first; returns how many. A flow with any job
 * left is kept, so a flow page stays whole while any of it remains.
 * $1 age ms float8, $2 limit
 */
export const flowPruneEmpty = `
WITH target AS (
  SELECT f.id FROM {{schema}}.flows AS f
  WHERE f.created_at < now() - $1::float8 * interval '1 millisecond'
    AND NOT EXISTS (SELECT 1 FROM {{schema}}.flow_jobs AS m WHERE m.flow_id = f.id)
  ORDER BY f.created_at
  LIMIT $2
  FOR UPDATE SKIP LOCKED
), pruned AS (
  DELETE FROM {{schema}}.flows WHERE id = ANY(ARRAY(SELECT id FROM target)) RETURNING 1
)
SELECT count(*)::int AS count FROM pruned`;

/**
 * Delete up to $2 dead-letter entries older than $1 ms, oldest first, with
 * their dead jobs and executions; returns how many. The entry is locked first
 * (a requeue or purge holding it is skipped), then its job (anyone writing it
 * is skipped too); deleting the job takes the entry with it by cascade.
 * $3 null: every kind but those of $4 (kinds with an age of their own);
 * else only kind $3.
 * $1 age ms float8, $2 limit, $3 kind|null, $4 kinds left out text[]
 */
export const deadLetterPrune = `
WITH entry AS (
  SELECT job_id FROM {{schema}}.dead_letter_jobs
  WHERE dead_at < now() - $1::float8 * interval '1 millisecond'
    AND CASE WHEN $3::text IS NULL THEN kind <> ALL($4::text[]) ELSE kind = $3 END
  ORDER BY dead_at
  LIMIT $2
  FOR UPDATE SKIP LOCKED
), target AS (
  SELECT j.id FROM {{schema}}.jobs AS j
  WHERE j.id = ANY(ARRAY(SELECT job_id FROM entry)) AND j.status = 'dead'
  ORDER BY j.id
  FOR UPDATE SKIP LOCKED
), pruned AS (
  DELETE FROM {{schema}}.jobs WHERE id = ANY(ARRAY(SELECT id FROM target)) RETURNING 1
)
SELECT count(*)::int AS count FROM pruned`;

/**
 * Delete up to $2 events sent more than $1 ms ago, oldest first; returns
 * how many. Waits that received one keep its payload in their record.
 * $1 age ms float8, $2 limit
 */
export const eventPrune = `
WITH target AS (
  SELECT id FROM {{schema}}.events
  WHERE created_at < now() - $1::float8 * interval '1 millisecond'
  ORDER BY created_at
  LIMIT $2
  FOR UPDATE SKIP LOCKED
), pruned AS (
  DELETE FROM {{schema}}.events WHERE id = ANY(ARRAY(SELECT id FROM target)) RETURNING 1
)
SELECT count(*)::int AS count FROM pruned`;
