import { TRANSITIONS } from "../../core/transitions.js";
import { JOB_COLUMNS } from "./job-columns.js";
import { type JobWrites, moveLiveJobs } from "./job-moves.js";
import { OUTCOME, READY, STATE, TERMINAL } from "./status-sets.js";

// Pieces every statement that ends an attempt shares (attempts.ts, leases.ts,
// transactional-completion.ts). Not statements themselves, so this module is
// not among the store's queries.

/**
 * A CTE `recorded` that records ended attempts in job_executions: `select`
 * yields (id, job_id, attempt, worker_id, started_at, finished_at, outcome,
 * error), one row per attempt that its statement's fenced update of jobs
 * just ended. A running attempt has no execution row (it lives on the job
 * row), so this insert is its one write there.
 */
export function attemptRecord(select: string): string {
  return `recorded AS (
  INSERT INTO {{schema}}.job_executions (id, job_id, attempt, worker_id, started_at, finished_at, outcome, error)
  ${select}
)`;
}

/** An attempt ends: the lease and the worker's hold go. */
export const ATTEMPT_ENDED = { locked_by: "NULL", current_execution_id: "NULL", lease_expires_at: "NULL", updated_at: "now()" } as const;

/**
 * A success (attempt_succeeded): `result` is its SQL expression. The row
 * keeps the attempt's execution id, worker, number and start: an attempt
 * that ends its job successfully is recorded on the job's history row, not
 * in job_executions (routines/job-attempts.ts reads it from there), so a
 * success writes one row. Readers show neither column as held
 * (rows.ts rowToJob).
 */
export function SUCCEEDED_WRITES(result: string): JobWrites {
  return { status: `'${TRANSITIONS.attempt_succeeded.running}'`, result, finished_at: "now()", lease_expires_at: "NULL", updated_at: "now()" };
}

/**
 * The common tail of every statement that ends an attempt without success.
 * Expects a CTE `target(id, execution_id, attempt, worker_id, started_at,
 * next_status, outcome, error, delay_ms, counts_attempt, dead_reason)`
 * whose rows are already locked, whose attempt columns are read from the
 * locked job row (attempts, locked_by, started_at), and whose next_status
 * already has the cancel override applied. It applies that decision and
 * nothing more: it moves the job, records the ended attempt and, for
 * `dead`, writes the dead-letter entry with the whole execution history in
 * the same statement, so the move is atomic. The history is read from the
 * statement's snapshot, which holds the earlier attempts but not the one
 * ending (its record is written by this statement), so that one is added
 * from `target`.
 */
export const ATTEMPT_END = `${moveLiveJobs(
  { name: "attempt", from: "target", alias: "t", where: "j.id = ANY(ARRAY(SELECT id FROM target)) AND j.id = t.id" },
  {
    status: "t.next_status",
    // An attempt that does not count (retry-after, a shutdown hand-back) is
    // given back, unless the job ends cancelled: then it ran and was
    // cancelled, and counts.
    attempts: `CASE WHEN NOT t.counts_attempt AND t.next_status <> ${STATE.cancelled} THEN j.attempts - 1 ELSE j.attempts END`,
    run_at: `CASE WHEN t.next_status IN (${READY}) THEN now() + t.delay_ms * interval '1 millisecond' ELSE j.run_at END`,
    finished_at: `CASE WHEN t.next_status IN (${TERMINAL}) THEN now() END`,
    last_error: "coalesce(t.error, j.last_error)",
    ...ATTEMPT_ENDED,
  },
)}, ${attemptRecord(`SELECT t.execution_id, t.id, t.attempt, t.worker_id, t.started_at, now(),
         CASE WHEN t.next_status = ${STATE.cancelled} THEN ${OUTCOME.cancelled} ELSE t.outcome END, t.error
  FROM target AS t`)}, buried AS (
  INSERT INTO {{schema}}.dead_letter_jobs
    (id, job_id, tenant, queue, kind, payload, attempts, max_attempts, reason, last_error, history)
  SELECT {{schema}}.uuid_v7(), m.id, m.tenant, m.queue, m.kind, m.payload, m.attempts, m.max_attempts,
         t.dead_reason, m.last_error,
         (SELECT coalesce(jsonb_agg(h.entry ORDER BY h.started_at, h.id), '[]'::jsonb) FROM (
            -- Earlier attempts; this one's row is written by this statement.
            SELECT e.id, e.started_at, jsonb_build_object(
                     'executionId', e.id, 'attempt', e.attempt, 'workerId', e.worker_id, 'startedAt', e.started_at,
                     'finishedAt', e.finished_at, 'outcome', e.outcome, 'error', e.error) AS entry
            FROM {{schema}}.job_executions AS e WHERE e.job_id = m.id
            UNION ALL
            SELECT t.execution_id, t.started_at, jsonb_build_object(
                     'executionId', t.execution_id, 'attempt', t.attempt, 'workerId', t.worker_id, 'startedAt', t.started_at,
                     'finishedAt', now(), 'outcome', t.outcome, 'error', t.error)) AS h)
  FROM attempt_ended AS m JOIN target AS t ON t.id = m.id
  WHERE m.status = ${STATE.dead}
)
SELECT ${JOB_COLUMNS} FROM attempt_moved`;
