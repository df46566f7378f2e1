import { requeueDeadJobs } from "./job-action-fragments.js";
import { JOB_COLUMNS } from "./job-columns.js";
import { recordRequeues } from "./requeue-fragments.js";
import { REQUEUE_ACTION, STATE } from "./status-sets.js";

// The dead-letter queue is jobs_dead: a dead job's row is its dead letter,
// with the letter's own id (dead_letter_id) and reason (dead_reason), and
// the death's time as its finished_at (migration 032). A dead row without a
// dead-letter id (its state written by hand) is not in the queue.

/**
 * A dead letter's columns, in the shape `rowToDeadLetter` reads, over
 * jobs_dead aliased `j`. The history is the job's attempts, oldest first,
 * as JSON (the shape the letters have always had): all of them are rows of
 * job_executions, as a dead job has no running attempt and no success
 * recorded on a history row; they are kept until the job leaves jobs_dead.
 */
export const DEAD_LETTER_COLUMNS = `j.dead_letter_id AS id, j.id AS job_id, j.tenant, j.queue, j.kind, j.payload, j.attempts, j.max_attempts,
  j.dead_reason AS reason, j.last_error,
  (SELECT coalesce(jsonb_agg(jsonb_build_object(
            'executionId', e.id, 'attempt', e.attempt, 'workerId', e.worker_id, 'startedAt', e.started_at,
            'finishedAt', e.finished_at, 'outcome', e.outcome, 'error', e.error) ORDER BY e.started_at, e.id), '[]'::jsonb)
   FROM {{schema}}.job_executions AS e WHERE e.job_id = j.id) AS history,
  j.finished_at AS dead_at`;

/** $1 tenant|null, $2 kind|null, $3 queue|null, $4 cursor id|null (exclusive), $5 limit — newest first */
export const deadLetterList = `
SELECT ${DEAD_LETTER_COLUMNS} FROM {{schema}}.jobs_dead AS j
WHERE j.dead_letter_id IS NOT NULL
  AND ($1::text IS NULL OR j.tenant = $1)
  AND ($2::text IS NULL OR j.kind = $2)
  AND ($3::text IS NULL OR j.queue = $3)
  AND ($4::uuid IS NULL OR j.dead_letter_id < $4)
ORDER BY j.dead_letter_id DESC
LIMIT $5`;

/** $1 dead-letter id, $2 tenant|null */
export const deadLetterGet = `
SELECT ${DEAD_LETTER_COLUMNS} FROM {{schema}}.jobs_dead AS j
WHERE j.dead_letter_id = $1 AND ($2::text IS NULL OR j.tenant = $2)`;

/**
 * Put a dead job back in the queue with fresh attempts and the same job id.
 * The row lock and the move out of jobs_dead, which clears the dead letter,
 * make a requeue happen once however many callers race. The execution
 * history stays in job_executions. A job with dependencies is released
 * from them (its counts are deleted): it runs now, whatever they are. Jobs
 * that depend on this one are re-armed at its commit: its move records the
 * return (routines/jobs-ended.ts).
 * The requeue is recorded for the job's timeline (job_requeues).
 * $1 dead-letter id, $2 tenant|null
 */
export const deadLetterRequeue = `
WITH target AS (
  SELECT j.id, j.status FROM {{schema}}.jobs_dead AS j
  WHERE j.dead_letter_id = $1 AND ($2::text IS NULL OR j.tenant = $2)
  FOR UPDATE
), released AS (
  DELETE FROM {{schema}}.job_dependency_state WHERE job_id = ANY(ARRAY(SELECT id FROM target))
)${requeueDeadJobs("requeue")}${recordRequeues("requeue_recorded", "requeue_moved", { action: REQUEUE_ACTION.requeue })}
SELECT ${JOB_COLUMNS} FROM requeue_moved`;

/** Delete a dead job for good: its row (the dead letter) and its executions (by trigger). $1 dead-letter id, $2 tenant|null */
export const deadLetterPurge = `
DELETE FROM {{schema}}.jobs AS j
WHERE j.status = ${STATE.dead} AND j.dead_letter_id = $1 AND ($2::text IS NULL OR j.tenant = $2)
RETURNING j.dead_letter_id AS id`;
