import { JOB_COLUMNS, jobColumnsOf } from "./job-columns.js";

// The tail every statement that ends an attempt without success shares
// (jobEndAttempts in attempts.ts, jobReclaimExpired in leases.ts). Not a
// statement itself, so this module is not among the store's queries.

/**
 * The common tail of every statement that ends an attempt without success.
 * Expects a CTE `target(id, execution_id, next_status, outcome, error, delay_ms, counts_attempt, dead_reason)`
 * whose rows are already locked and whose next_status already has the
 * cancel override applied. It applies that decision and nothing more: it
 * moves the job, closes the execution and, for `dead`, writes the
 * dead-letter entry with the whole execution history in the same statement,
 * so the move is atomic. The history is read from the statement's snapshot,
 * where the current execution is still open, so its final fields are taken
 * from `target`.
 */
export const ATTEMPT_END = `
, moved AS (
  UPDATE {{schema}}.jobs AS j SET
    status = t.next_status,
    -- An attempt that does not count (retry-after, a shutdown hand-back) is
    -- given back, unless the job ends cancelled: then it ran and was
    -- cancelled, and counts.
    attempts = CASE WHEN NOT t.counts_attempt AND t.next_status <> 'cancelled'
                    THEN j.attempts - 1 ELSE j.attempts END,
    run_at = CASE WHEN t.next_status IN ('queued', 'retrying') THEN now() + t.delay_ms * interval '1 millisecond' ELSE j.run_at END,
    finished_at = CASE WHEN t.next_status IN ('succeeded', 'cancelled', 'dead') THEN now() END,
    last_error = coalesce(t.error, j.last_error),
    locked_by = NULL, current_execution_id = NULL, lease_expires_at = NULL, updated_at = now()
  FROM target AS t WHERE j.id = ANY(ARRAY(SELECT id FROM target)) AND j.id = t.id
  RETURNING ${jobColumnsOf("j")}
), recorded AS (
  UPDATE {{schema}}.job_executions AS e SET
    outcome = CASE WHEN t.next_status = 'cancelled' THEN 'cancelled' ELSE t.outcome END,
    finished_at = now(), error = t.error
  FROM target AS t WHERE e.id = ANY(ARRAY(SELECT execution_id FROM target)) AND e.id = t.execution_id
), buried AS (
  INSERT INTO {{schema}}.dead_letter_jobs
    (id, job_id, tenant, queue, kind, payload, attempts, max_attempts, reason, last_error, history)
  SELECT {{schema}}.uuid_v7(), m.id, m.tenant, m.queue, m.kind, m.payload, m.attempts, m.max_attempts,
         t.dead_reason, m.last_error,
         (SELECT coalesce(jsonb_agg(jsonb_build_object(
                   'executionId', e.id, 'attempt', e.attempt, 'workerId', e.worker_id, 'startedAt', e.started_at,
                   'finishedAt', CASE WHEN e.id = t.execution_id THEN now() ELSE e.finished_at END,
                   'outcome', CASE WHEN e.id = t.execution_id THEN t.outcome ELSE e.outcome END,
                   'error', CASE WHEN e.id = t.execution_id THEN t.error ELSE e.error END)
                 ORDER BY e.started_at, e.id), '[]'::jsonb)
            FROM {{schema}}.job_executions AS e WHERE e.job_id = m.id)
  FROM moved AS m JOIN target AS t ON t.id = m.id
  WHERE m.status = 'dead'
)
SELECT ${JOB_COLUMNS} FROM moved`;
