import { MAX_CLAIM_BATCH_SIZE } from "../../core/defaults.js";
import { CLAIMED_COLUMNS, CLAIM_ROWS, IN_UNRESTRICTED_QUEUE } from "./claim-fragments.js";
import { JOB_COLUMNS, jobColumnsOf } from "./job-columns.js";

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
 * The claims' candidates: up to `limit` ready jobs of the worker's kinds
 * ($3) that pass `queueTest`, in claim order, each locked as it is read
 * (rows another worker holds are skipped).
 */
function readyInClaimOrder(queueTest: string, limit: string): string {
  return `SELECT id FROM {{schema}}.jobs AS j
  WHERE status IN ('queued', 'retrying') AND run_at <= now()
    AND array_position($3::text[], kind) IS NOT NULL
    AND ${queueTest}
    -- Paused and limited queues are left to claims-limited.ts. One InitPlan
    -- per statement over a tiny table: the ready index scan is unchanged.
    -- Written as CASE, not "queue <> ALL(…)": the planner estimates <> ALL
    -- from the queue column's statistics, and with one queue name in the
    -- table it expects no row to pass, and sorts a sequential scan of every
    -- ready job. A CASE gets the default estimate (half) and keeps the index.
    AND ${IN_UNRESTRICTED_QUEUE}
  ORDER BY priority, run_at, id
  LIMIT ${limit}
  FOR UPDATE SKIP LOCKED`;
}

/**
 * Claim up to $2 ready jobs in one statement. SKIP LOCKED lets any number of
 * workers claim at once without waiting on each other's rows. Each claimed
 * row gets a fresh execution id and lease, and its attempt is recorded.
 * Paused queues and queues with limits are skipped (see claims-limited.ts).
 * $1 worker_id, $2 limit, $3 kinds text[], $4 queues text[]|null (null: all), $5 lease_ms, $6 fresh execution ids uuid[] (up to $2; rows beyond them take uuid_v7())
 *
 * The kind test is written `array_position(kinds, kind) IS NOT NULL`, not
 * `kind = ANY(kinds)`, so that the plan does not depend on table statistics:
 * before the first ANALYZE the planner guesses 0.5% of rows per listed kind,
 * estimates fewer ready rows than the LIMIT, and sorts every ready row (on
 * disk, for a deep backlog).
 * The planner has no statistics for the function call and always estimates
 * it true for almost every row, so it walks jobs_ready_idx in claim order and
 * stops after $2 rows, before and after ANALYZE. The cost: a worker that
 * handles only a few of the kinds in a deep backlog steps over the others.
 */
export const jobClaim = `
WITH claimable AS (
  ${readyInClaimOrder("($4::text[] IS NULL OR queue = ANY($4::text[]))", "$2")}
)${CLAIM_ROWS}
SELECT ${CLAIMED_COLUMNS} FROM claimed ORDER BY priority, run_at, id`;

/**
 * jobClaim for a worker over every queue ($4 must be null), written so that
 * its plan does not depend on its values: the worker prepares it once on its
 * claim connection and runs it on that one plan (claim-store.ts), where
 * jobClaim is planned again at every call, a large share of a small claim. The inner
 * LIMIT is a constant, MAX_CLAIM_BATCH_SIZE, so the planner always sees at
 * most a thousand rows wanted in claim order and walks jobs_ready_idx; the
 * outer LIMIT $2 stops the walk, and so the locking, after $2 rows (the
 * executor pulls rows only as the outer LIMIT asks). With jobClaim's
 * `LIMIT $2` alone, a plan made without the values guessed a tenth of the
 * ready rows and, where the table's row estimate was stale (the tenant
 * index built while it was empty), read and sorted every ready job
 * (test/statement-plans.test.ts checks this form's plan).
 * $1 worker_id, $2 limit (at most MAX_CLAIM_BATCH_SIZE), $3 kinds text[], $4 null, $5 lease_ms, $6 fresh execution ids uuid[]
 */
export const jobClaimAllQueues = `
WITH claimable AS (
  SELECT id FROM (
    ${readyInClaimOrder("$4::text[] IS NULL", String(MAX_CLAIM_BATCH_SIZE))}
  ) AS ready
  LIMIT $2
)${CLAIM_ROWS}
SELECT ${CLAIMED_COLUMNS} FROM claimed ORDER BY priority, run_at, id`;

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
const endAttempts = `
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
)${endAttempts}`;

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
  SELECT j.id, j.current_execution_id AS execution_id,
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
)${endAttempts}`;
