import { ATTEMPT_END_EVENTS } from "../../core/transitions.js";
import { JOB_COLUMNS } from "./job-columns.js";
import { type JobWrites, moveLiveJobs } from "./job-moves.js";
import { STATE } from "./status-sets.js";
import { deadReasonOf, outcomeOf, statusWrites } from "./status-writes.js";

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

/**
 * A success (attempt_succeeded): `result` is its SQL expression. The row
 * keeps the attempt's execution id, worker, number and start (the event's
 * hold is `record`): an attempt that ends its job successfully is recorded
 * on the job's history row, not in job_executions (routines/job-attempts.ts
 * reads it from there), so a success writes one row. Readers show neither
 * column as held (rows.ts rowToJob).
 */
export function SUCCEEDED_WRITES(result: string): JobWrites {
  return statusWrites("attempt_succeeded", { result });
}

/** The attempt-ending events ATTEMPT_END applies: every one but a success. */
const UNSUCCESSFUL_ENDS = { expr: "t.event", events: ATTEMPT_END_EVENTS.filter((event) => event !== "attempt_succeeded") } as const;

/**
 * The common tail of every statement that ends an attempt without success.
 * Expects a CTE `target(id, execution_id, attempt, worker_id, started_at,
 * event, outcome, error, delay_ms)` whose rows are already locked, whose
 * attempt columns are read from the locked job row (attempts, locked_by,
 * started_at), and whose event (an attempt-ending event of
 * core/transitions.ts, not a success) already has the cancel-at-end rule
 * applied (cancelAtEnd). It writes what the transition table says the event
 * writes (statusWrites) and nothing more: it moves the job, records the ended attempt and, for
 * `dead`, writes the dead-letter entry with the whole execution history in
 * the same statement, so the move is atomic. The history is read from the
 * statement's snapshot, which holds the earlier attempts but not the one
 * ending (its record is written by this statement), so that one is added
 * from `target`.
 */
export const ATTEMPT_END = `${moveLiveJobs(
  { name: "attempt", from: "target", alias: "t", where: "j.id = ANY(ARRAY(SELECT id FROM target)) AND j.id = t.id" },
  statusWrites(UNSUCCESSFUL_ENDS, { delayMs: "t.delay_ms", error: "t.error" }),
)}, ${attemptRecord(`SELECT t.execution_id, t.id, t.attempt, t.worker_id, t.started_at, now(),
         ${outcomeOf(UNSUCCESSFUL_ENDS, "t.outcome")}, t.error
  FROM target AS t`)}, buried AS (
  INSERT INTO {{schema}}.dead_letter_jobs
    (id, job_id, tenant, queue, kind, payload, attempts, max_attempts, reason, last_error, history)
  SELECT {{schema}}.uuid_v7(), m.id, m.tenant, m.queue, m.kind, m.payload, m.attempts, m.max_attempts,
         ${deadReasonOf(UNSUCCESSFUL_ENDS)}, m.last_error,
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
