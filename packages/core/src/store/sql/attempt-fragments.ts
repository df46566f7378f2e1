import { ATTEMPT_END_EVENTS } from "../../core/transitions.js";
import { JOB_COLUMNS } from "./job-columns.js";
import { type JobWrites, moveLiveJobs } from "./job-moves.js";
import { outcomeOf, statusWrites } from "./status-writes.js";

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
 * writes (statusWrites) and nothing more: it moves the job and records the
 * ended attempt; a job that ends `dead` lands in jobs_dead as its own dead
 * letter (a dead-letter id and the event's dead reason, job-moves.ts), its
 * history read from its attempts (sql/dead-letters.ts), so the move is
 * atomic and the job is stored once.
 */
export const ATTEMPT_END = `${moveLiveJobs(
  { name: "attempt", from: "target", alias: "t", where: "j.id = ANY(ARRAY(SELECT id FROM target)) AND j.id = t.id" },
  statusWrites(UNSUCCESSFUL_ENDS, { delayMs: "t.delay_ms", error: "t.error" }),
)}, ${attemptRecord(`SELECT t.execution_id, t.id, t.attempt, t.worker_id, t.started_at, now(),
         ${outcomeOf(UNSUCCESSFUL_ENDS, "t.outcome")}, t.error
  FROM target AS t`)}
SELECT ${JOB_COLUMNS} FROM attempt_moved`;
