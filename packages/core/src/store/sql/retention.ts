import { historyKinds } from "./history-kinds.js";
import { HISTORY, STATE } from "./status-sets.js";

// Retention. Succeeded and cancelled jobs live in job_history, one
// partition per day (UTC) of finished_at (migration 028): a prune drops each
// day that ended longer ago than the age, with what is recorded about its
// jobs, instead of deleting rows one by one, so it leaves no dead rows for
// VACUUM and costs the same for a day of ten jobs or of ten million. Rows
// outside every day (job_history_default, and the partitions migration 028
// made for the history it found) and the rows of kinds with an age of their
// own are deleted in batches, kind by kind through jobs_finished_by_kind_idx. Dead letters (the rows of jobs_dead)
// are deleted in batches too: jobs die rarely.
//
// A batch delete repeats its cutoff on finished_at, the partition key, so
// the days after it are pruned from the plan when it starts, and each id is
// looked up only in the days it can be in.
//
// Every batch statement locks its rows with SKIP LOCKED, so any number of
// workers may prune at once: each row is deleted by exactly one of them,
// none waits. What is recorded about a deleted job (executions, steps,
// keys) goes with it through the jobs_deleted statement
// trigger (routines/jobs-deleted.ts); a dropped day's, through
// job_history_drop.

/**
 * Make the day partitions of job_history for today and $1 days ahead that
 * are missing (routines/job-history-extend.ts), as every worker does
 * (worker/history-upkeep.ts); returns how many were made.
 * $1 days ahead integer
 */
export const historyExtend = `SELECT {{schema}}.job_history_extend(NULL, $1::integer) AS made`;

/**
 * Detach every day of job_history that ended more than $1 ms ago and holds
 * no job of the kinds $2 (routines/job-history-detach.ts), waiting at most
 * $3 ms for the lock. Returns nothing: historyDetached lists what to drop.
 * $1 age ms float8, $2 kinds kept longer text[], $3 lock timeout ms
 */
export const historyDetach = `
SELECT cardinality({{schema}}.job_history_detach(now() - $1::float8 * interval '1 millisecond', $2::text[], $3::integer)) AS detached`;

/**
 * The days of history detached and not yet dropped: this prune's, and any
 * a prune interrupted between the two steps left behind.
 */
export const historyDetached = `
SELECT c.relname AS name FROM pg_class AS c
WHERE c.relnamespace = '{{schema}}'::regnamespace AND c.relkind = 'r' AND NOT c.relispartition
  AND c.relname ~ '^job_history_(before_)?[0-9]{8}$'
ORDER BY c.relname`;

/**
 * Drop one detached day of history with its jobs' records
 * (routines/job-history-drop.ts); returns how many jobs it held.
 * $1 table name
 */
export const historyDrop = `SELECT {{schema}}.job_history_drop($1::text) AS count`;

/**
 * Delete up to $2 succeeded or cancelled jobs that finished on a day (UTC)
 * that ended more than $1 ms ago (by the database clock), the rule the
 * dropped days follow, oldest first, except
 * jobs of the kinds $3 (those with an age of their own, pruned by
 * jobPruneFinishedOfKind); returns how many. Kind by kind, oldest first
 * within each, through jobs_finished_by_kind_idx (history-kinds.ts).
 * $1 age ms float8, $2 limit, $3 kinds left out text[]
 */
export const jobPruneFinished = `
WITH RECURSIVE ${historyKinds("kinds")}, target AS (
  SELECT t.id FROM kinds AS k
  CROSS JOIN LATERAL (
    SELECT j.id FROM {{schema}}.jobs AS j
    WHERE j.status IN (${HISTORY}) AND j.kind = k.kind
      AND j.finished_at < date_trunc('day', now() - $1::float8 * interval '1 millisecond', 'UTC')
    ORDER BY j.finished_at
    LIMIT $2
    FOR UPDATE SKIP LOCKED) AS t
  WHERE k.kind IS NOT NULL AND k.kind <> ALL($3::text[])
  LIMIT $2
), pruned AS (
  DELETE FROM {{schema}}.jobs WHERE id = ANY(ARRAY(SELECT id FROM target)) AND status IN (${HISTORY})
    AND finished_at < date_trunc('day', now() - $1::float8 * interval '1 millisecond', 'UTC')
  RETURNING 1
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
  WHERE status IN (${HISTORY}) AND kind = $3
    AND finished_at < now() - $1::float8 * interval '1 millisecond'
  ORDER BY finished_at
  LIMIT $2
  FOR UPDATE SKIP LOCKED
), pruned AS (
  DELETE FROM {{schema}}.jobs WHERE id = ANY(ARRAY(SELECT id FROM target)) AND status IN (${HISTORY})
    AND finished_at < now() - $1::float8 * interval '1 millisecond'
  RETURNING 1
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
 * Delete up to $2 dead letters that died more than $1 ms ago, oldest first,
 * with their executions; returns how many. A dead letter is its dead job's
 * row (sql/dead-letters.ts), found through jobs_dead_finished_idx and
 * locked with SKIP LOCKED (a requeue or purge holding it is skipped).
 * $3 null: every kind but those of $4 (kinds with an age of their own);
 * else only kind $3.
 * $1 age ms float8, $2 limit, $3 kind|null, $4 kinds left out text[]
 */
export const deadLetterPrune = `
WITH target AS (
  SELECT j.id FROM {{schema}}.jobs AS j
  WHERE j.status = ${STATE.dead} AND j.dead_letter_id IS NOT NULL
    AND j.finished_at < now() - $1::float8 * interval '1 millisecond'
    AND CASE WHEN $3::text IS NULL THEN j.kind <> ALL($4::text[]) ELSE j.kind = $3 END
  ORDER BY j.finished_at
  LIMIT $2
  FOR UPDATE SKIP LOCKED
), pruned AS (
  DELETE FROM {{schema}}.jobs WHERE id = ANY(ARRAY(SELECT id FROM target)) AND status = ${STATE.dead} RETURNING 1
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
