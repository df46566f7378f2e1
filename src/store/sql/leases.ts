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
  SELECT j.id, j.current_execution_id AS execution_id, j.cancel_requested FROM {{schema}}.jobs AS j
  JOIN unnest($1::uuid[], $2::uuid[]) AS h(id, execution_id)
    ON j.id = h.id AND j.current_execution_id = h.execution_id
  WHERE j.id = ANY($1::uuid[])
), locked AS (
  SELECT j.id FROM {{schema}}.jobs AS j
  JOIN held ON j.id = held.id AND j.current_execution_id = held.execution_id
  WHERE j.id = ANY($1::uuid[])
  FOR NO KEY UPDATE OF j SKIP LOCKED
), renewed AS (
  UPDATE {{schema}}.jobs AS j SET lease_expires_at = now() + $3::float8 * interval '1 millisecond'
  WHERE j.id = ANY(ARRAY(SELECT id FROM locked))
  RETURNING j.id, j.current_execution_id AS execution_id, j.cancel_requested
)
SELECT id, execution_id, cancel_requested, true AS renewed FROM renewed
UNION ALL
SELECT id, execution_id, cancel_requested, false FROM held
WHERE id <> ALL(ARRAY(SELECT id FROM locked))`;

/**
 * Reclaim jobs whose lease expired: back to the queue, or to the dead-letter
 * queue when their attempts are spent. The expiry test and the row lock are
 * taken in the same SELECT … FOR UPDATE SKIP LOCKED, and Postgres re-checks
 * the WHERE clause against the newest row version after locking, so a job
 * that was completed or re-claimed (new lease) after the sweep looked is
 * left alone; a row another transaction is writing right now is skipped.
 *
 * No worker reports these attempts, and which rows expired is known only
 * once this statement has locked them, so the decision is made here: the
 * CASE below mirrors decideOutcome({ kind: "lease_expired" }) in
 * src/core/outcome.ts (dead when attempts >= max_attempts, else retrying at
 * once; the attempt counts), plus the cancel override of jobEndAttempts.
 * Change both together.
 * $1 limit, $2 error (json text) recorded on each reclaimed attempt
 */
export const jobReclaimExpired = `
WITH target AS (
  SELECT j.id, j.current_execution_id AS execution_id, j.attempts AS attempt, j.locked_by AS worker_id, j.started_at,
         CASE WHEN j.cancel_requested THEN 'cancelled'
              WHEN j.attempts >= j.max_attempts THEN 'dead'
              ELSE 'retrying' END AS next_status,
         'lease_expired'::text AS outcome,
         jsonb_set($2::jsonb, '{message}', to_jsonb('lease expired on worker ' || j.locked_by)) AS error,
         0::float8 AS delay_ms, true AS counts_attempt, 'attempts_exhausted'::text AS dead_reason
  FROM {{schema}}.jobs AS j
  WHERE j.status = 'running' AND j.lease_expires_at < now()
  ORDER BY j.lease_expires_at
  LIMIT $1
  FOR UPDATE OF j SKIP LOCKED
)${ATTEMPT_END}`;
