import { STATE } from "./status-sets.js";
import { ATTEMPT_END } from "./attempt-fragments.js";

// Every statement about a running job matches on current_execution_id (fencing):
// a worker that lost its lease matches no row and so writes nothing.
// The lease renewal never waits for a row lock: it skips rows another
// transaction holds (SKIP LOCKED), as the claim and the reclaim sweep do. So
// a completion batch can lock its rows in whatever order its plan reads
// them: nothing it could wait on ever waits on it. Two completions or failure batches never
// deadlock each other: each matches only rows whose current execution is
// its own in its snapshot, and a job can be its worker's in both snapshots
// only if it was reassigned both ways at once, which time order rules out.
// Batch statements find their rows with `id = ANY(array)`: joined to a CTE or
// unnest() alone, the planner estimated a hash join over a sequential scan of
// the whole jobs table, which grows with every finished job.
// All lease times come from the database clock (now()), never a worker's.

/**
 * Renew the leases of many running jobs at once (one statement per worker per
 * tick). Returns every job still held: `renewed` false for one whose row
 * another transaction holds right now (a completion in flight, a handler's
 * transaction fencing its effect, a cancel request), whose lease is left as
 * it was and renewed at the next tick; waiting for it would stall the
 * renewal of every other job of the worker for as long as that transaction
 * lasts. Rows not returned were lost (reclaimed or finished elsewhere);
 * `cancel_requested` tells the worker to abort the handler.
 * $1 job ids uuid[], $2 execution ids uuid[] (aligned), $3 lease_ms
 */
export const jobHeartbeat = `
WITH held AS (
  SELECT j.id, j.current_execution_id AS execution_id, j.cancel_requested FROM {{schema}}.jobs_live AS j
  JOIN unnest($1::uuid[], $2::uuid[]) AS h(id, execution_id)
    ON j.id = h.id AND j.current_execution_id = h.execution_id
  WHERE j.id = ANY($1::uuid[])
), locked AS (
  SELECT j.id FROM {{schema}}.jobs_live AS j
  JOIN held ON j.id = held.id AND j.current_execution_id = held.execution_id
  WHERE j.id = ANY($1::uuid[])
  FOR NO KEY UPDATE OF j SKIP LOCKED
), renewed AS (
  UPDATE {{schema}}.jobs_live AS j SET lease_expires_at = now() + $3::float8 * interval '1 millisecond'
  WHERE j.id = ANY(ARRAY(SELECT id FROM locked))
  RETURNING j.id, j.current_execution_id AS execution_id, j.cancel_requested
)
SELECT id, execution_id, cancel_requested, true AS renewed FROM renewed
UNION ALL
SELECT id, execution_id, cancel_requested, false FROM held
WHERE id <> ALL(ARRAY(SELECT id FROM locked))`;

/**
 * The reclaim sweep's first statement, in its transaction: lock up to
 * $1 running jobs whose lease expired and read what deciding their end
 * needs, and the worker its error names (JobStore.jobReclaimExpired decides
 * each with decideExpiredLease, then applies the decisions with
 * jobEndExpired, which reads the attempt's number, worker and start from
 * the locked row as every attempt end does). The
 * expiry test and the row lock are taken in the same SELECT … FOR UPDATE
 * SKIP LOCKED, and Postgres re-checks the WHERE clause against the newest
 * row version after locking, so a job that was completed or re-claimed
 * (new lease) after the sweep looked is left alone; a row another
 * transaction is writing right now is skipped, never waited for. Locked,
 * the rows cannot change until the sweep commits: a cancel request or a
 * completion waits for it.
 * $1 limit
 */
export const jobLockExpired = `
SELECT j.id, j.current_execution_id AS execution_id, j.attempts, j.max_attempts, j.cancel_requested, j.locked_by AS worker_id
FROM {{schema}}.jobs AS j
WHERE j.status = ${STATE.running} AND j.lease_expires_at < now()
ORDER BY j.lease_expires_at
LIMIT $1
FOR UPDATE OF j SKIP LOCKED`;

/**
 * The reclaim sweep's second statement: apply the decisions made for the
 * rows jobLockExpired locked, through the attempt-ending tail every
 * unsuccessful end shares (ATTEMPT_END). Each row is fenced on what the
 * decision was made from: the same execution, still running, its lease
 * still expired and its cancel flag as read. In the sweep's transaction
 * the rows are locked and all of that holds; a row that changed anyway
 * (the statements run outside a transaction on a caller's connection) is
 * left for the next sweep. SKIP LOCKED: the sweep never waits for a lock
 * (see the lock order above); its own locks do not stop it.
 * $1 job ids uuid[], $2 execution ids uuid[], $3 cancel requested as read boolean[],
 * $4 events text[] (the cancel-at-end rule applied on the flag as read), $5 outcomes text[],
 * $6 errors (json text)[], $7 delays ms float8[]
 */
export const jobEndExpired = `
WITH target AS (
  SELECT j.id, j.current_execution_id AS execution_id, j.attempts AS attempt, j.locked_by AS worker_id, j.started_at,
         d.event, d.outcome, d.error::jsonb AS error, d.delay_ms
  FROM unnest($1::uuid[], $2::uuid[], $3::boolean[], $4::text[], $5::text[], $6::text[], $7::float8[])
         AS d(id, execution_id, cancel_requested, event, outcome, error, delay_ms)
  JOIN {{schema}}.jobs AS j ON j.id = d.id AND j.current_execution_id = d.execution_id
  WHERE j.id = ANY($1::uuid[]) AND j.status = ${STATE.running} AND j.lease_expires_at < now() AND j.cancel_requested = d.cancel_requested
  FOR UPDATE OF j SKIP LOCKED
)${ATTEMPT_END}`;
