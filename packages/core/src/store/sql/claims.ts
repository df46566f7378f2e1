import { MAX_CLAIM_BATCH_SIZE } from "../../core/defaults.js";
import { CLAIMED_COLUMNS, claimRows, IN_UNRESTRICTED_QUEUE, STATEMENT_CLAIM } from "./claim-fragments.js";
import { READY } from "./status-sets.js";

// Claims: ready jobs taken by a worker, each with a fresh execution id and
// lease. What follows a claim is elsewhere: renewing and reclaiming leases
// (leases.ts), ending attempts (attempts.ts). Claims from limited queues and
// fair claims across tenants are in claims-limited.ts.

/**
 * The claims' candidates: up to `limit` ready jobs of the worker's kinds
 * ($3) that pass `queueTest`, in claim order, each locked as it is read
 * (rows another worker holds are skipped).
 */
function readyInClaimOrder(queueTest: string, limit: string, after = ""): string {
  return `SELECT id FROM {{schema}}.jobs AS j
  WHERE status IN (${READY}) AND run_at <= now()${after}
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

// The claim cursor. Every job claimed leaves an entry in the ready indexes
// that a claim must step over until VACUUM removes it, and VACUUM cannot
// while anything holds back the xmin horizon (a long transaction, a replica
// with hot_standby_feedback, an analytics query): then every claim walks
// every job claimed since, from the head of the index, and the claims slow
// down as the pile grows. A claim "after" starts its index scan past the
// last job the worker claimed (its claim-order key: priority, run_at, id),
// so it reads only entries not claimed yet. Jobs that land before the
// cursor (a higher priority, a retry due earlier) are found by the claim
// from the head that the worker runs at least every CLAIM_CURSOR_RESET_MS
// (claim-store.ts).

/** The claim-order condition of a claim after the cursor: $7 priority, $8 run_at (text), $9 id. */
const AFTER_CURSOR = `
    AND (priority, run_at, id) > ($7::smallint, $8::timestamptz, $9::uuid)`;

/**
 * The claimed rows with the cursor a following claim starts after: the
 * claim-order key of the last of them (run_at as text, exact to the
 * microsecond), the same on every row.
 */
const CLAIMED_WITH_CURSOR = `, last AS (
  SELECT priority AS cursor_priority, run_at::text AS cursor_run_at, id AS cursor_id FROM claimed
  ORDER BY priority DESC, run_at DESC, id DESC LIMIT 1
)
SELECT ${CLAIMED_COLUMNS}, last.* FROM claimed, last ORDER BY priority, run_at, id`;

function claimStatement(afterCursor: boolean): string {
  return `
WITH claimable AS (
  ${readyInClaimOrder("($4::text[] IS NULL OR queue = ANY($4::text[]))", "$2", afterCursor ? AFTER_CURSOR : "")}
)${claimRows(STATEMENT_CLAIM)}${CLAIMED_WITH_CURSOR}`;
}

/**
 * Claim up to $2 ready jobs in one statement. SKIP LOCKED lets any number of
 * workers claim at once without waiting on each other's rows. Each claimed
 * row gets a fresh execution id and lease (its attempt, on the job row).
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
export const jobClaim = claimStatement(false);

/** jobClaim after the cursor. $1-$6 as jobClaim, $7 priority, $8 run_at (text), $9 id of the last job claimed. */
export const jobClaimAfter = claimStatement(true);

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
export const jobClaimAllQueues = claimAllQueuesStatement(false);

/** jobClaimAllQueues after the cursor. $1-$6 as jobClaimAllQueues, $7 priority, $8 run_at (text), $9 id of the last job claimed. */
export const jobClaimAllQueuesAfter = claimAllQueuesStatement(true);

function claimAllQueuesStatement(afterCursor: boolean): string {
  return `
WITH claimable AS (
  SELECT id FROM (
    ${readyInClaimOrder("$4::text[] IS NULL", String(MAX_CLAIM_BATCH_SIZE), afterCursor ? AFTER_CURSOR : "")}
  ) AS ready
  LIMIT $2
)${claimRows(STATEMENT_CLAIM)}${CLAIMED_WITH_CURSOR}`;
}
