import { ATTEMPT_END } from "./attempt-fragments.js";

// Ending attempts: success (jobComplete) and everything else (jobEndAttempts).
// The lease renewal and the reclaim sweep are in leases.ts, whose header
// explains the fencing and the lock order these statements share.
//
// Every statement about a running job matches on current_execution_id (fencing):
// a worker that lost its lease matches no row and so writes nothing.

/**
 * Mark many attempts succeeded in one statement, fenced per job.
 * $1 job ids uuid[], $2 execution ids uuid[], $3 results (json text|null)[]
 */
export const jobComplete = `
WITH finished AS (
  SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[]) AS f(id, execution_id, result)
), done AS (
  UPDATE {{schema}}.jobs AS j SET
    status = 'succeeded', result = finished.result::jsonb, finished_at = now(), updated_at = now(),
    locked_by = NULL, current_execution_id = NULL, lease_expires_at = NULL
  FROM finished
  WHERE j.id = ANY($1::uuid[]) AND j.id = finished.id AND j.current_execution_id = finished.execution_id
  RETURNING j.id, finished.execution_id
), recorded AS (
  -- Only the executions of the jobs just completed (the fence held), looked
  -- up by one array: joined to done with e.id = ANY($2) beside it, each
  -- of the nested loop's lookups re-read the whole array.
  UPDATE {{schema}}.job_executions AS e SET outcome = 'succeeded', finished_at = now()
  WHERE e.id = ANY(ARRAY(SELECT execution_id FROM done))
)
SELECT execution_id FROM done`;

/**
 * End attempts that did not succeed (failed, timed out, asked to retry after
 * a delay, interrupted by shutdown), as the worker decided with
 * decideOutcome (src/core/outcome.ts): this statement fences each job on its
 * execution id and applies the decision. The one rule decided here is the
 * cancel override: a job whose cancel was requested ends `cancelled`
 * whatever was decided. `cancel_requested` can be set by another
 * transaction until this statement locks the row, so only a read under that
 * lock sees its final value; a decision made before the write could not.
 * $1 job ids uuid[], $2 execution ids uuid[], $3 outcomes text[], $4 errors (json text|null)[],
 * $5 delays ms float8[], $6 next statuses text[], $7 counts attempt boolean[], $8 dead reasons (text|null)[]
 */
export const jobEndAttempts = `
WITH target AS (
  SELECT j.id, j.current_execution_id AS execution_id,
         CASE WHEN j.cancel_requested THEN 'cancelled' ELSE p.next_status END AS next_status,
         p.outcome, p.error::jsonb AS error, p.delay_ms, p.counts_attempt, p.dead_reason
  FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::float8[], $6::text[], $7::boolean[], $8::text[])
         AS p(id, execution_id, outcome, error, delay_ms, next_status, counts_attempt, dead_reason)
  JOIN {{schema}}.jobs AS j ON j.id = p.id AND j.current_execution_id = p.execution_id
  WHERE j.id = ANY($1::uuid[])
  ORDER BY j.id
  FOR UPDATE OF j
)${ATTEMPT_END}`;
