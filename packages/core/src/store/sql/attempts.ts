import { ATTEMPT_END, SUCCEEDED_WRITES } from "./attempt-fragments.js";
import { moveLiveJobs } from "./job-moves.js";
import { LIVE } from "./status-sets.js";
import { cancelAtEnd } from "./status-writes.js";

// Ending attempts: success (jobComplete) and everything else (jobEndAttempts).
// The lease renewal and the reclaim sweep are in leases.ts, whose header
// explains the fencing and the lock order these statements share.
//
// Every statement about a running job matches on current_execution_id (fencing):
// a worker that lost its lease matches no row and so writes nothing, its
// attempt's execution record included: that record is written only here, from
// the rows the fenced update returned (attempt-fragments.ts attemptRecord).

/**
 * Mark many attempts succeeded in one statement, fenced per job on its
 * execution id. Each job moves to job_history with its attempt on its row
 * (SUCCEEDED_WRITES): nothing is written to job_executions. A job whose
 * kind keeps no succeeded jobs ($4 false) is deleted instead (job-moves.ts
 * MoveSource.keep).
 * $1 job ids uuid[], $2 execution ids uuid[], $3 results (json text|null)[], $4 kept boolean[]
 */
export const jobComplete = `
WITH finished AS (
  SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::boolean[]) AS f(id, execution_id, result, keep)
)${moveLiveJobs(
  {
    name: "done",
    from: "finished",
    alias: "finished",
    where: "j.id = ANY($1::uuid[]) AND j.id = finished.id AND j.current_execution_id = finished.execution_id",
    returning: { execution_id: "finished.execution_id" },
    keep: "finished.keep",
  },
  SUCCEEDED_WRITES("finished.result::jsonb"),
)}
SELECT execution_id FROM done_moved`;

/**
 * End attempts that did not succeed (failed, timed out, asked to retry after
 * a delay, interrupted by shutdown), as the worker decided with
 * decideOutcome (src/core/outcome.ts), each as its event of the transition
 * table: this statement fences each job on its execution id and writes what
 * the event writes. The one rule applied here is the cancel-at-end rule
 * (cancelAtEnd, core/transitions.ts CANCEL_OBSERVED_AT): a job whose cancel
 * was requested ends as `cancel_observed` says, whatever was decided (no
 * decision here is a success). `cancel_requested`
 * can be set by another transaction until this statement locks the row, so
 * only a read under that lock sees its final value; a decision made before
 * the write could not. test/worker/attempt-end-rules.test.ts runs every
 * decision, with and without a cancel, through both.
 * $1 job ids uuid[], $2 execution ids uuid[], $3 outcomes text[], $4 errors (json text|null)[],
 * $5 delays ms float8[], $6 events text[]
 */
export const jobEndAttempts = `
WITH target AS (
  SELECT j.id, j.current_execution_id AS execution_id, j.attempts AS attempt, j.locked_by AS worker_id, j.started_at,
         ${cancelAtEnd("p.event", "j.cancel_requested")} AS event,
         p.outcome, p.error::jsonb AS error, p.delay_ms
  FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::float8[], $6::text[])
         AS p(id, execution_id, outcome, error, delay_ms, event)
  JOIN {{schema}}.jobs AS j ON j.id = p.id AND j.current_execution_id = p.execution_id
  WHERE j.id = ANY($1::uuid[]) AND j.status IN (${LIVE})
  ORDER BY j.id
  FOR UPDATE OF j
)${ATTEMPT_END}`;
