import { COMMIT_WITHOUT_WAITING } from "./transaction-settings.js";

// Pieces of SQL that every claim statement shares (claims.ts, claims-limited.ts).
// Not statements themselves, so this module is not among the store's queries.
// Times are statement_timestamp(): the same as now() in the fast claim's
// single-statement transaction, and right in the limited claims' transactions
// (see claims-limited.ts).

/**
 * True for a job whose queue is neither paused nor limited, by queue or by
 * key (a key-limited queue has a default row, limit_key '', in key_limits:
 * migration 016). CASE rather than `queue <> ALL(…)` for the planner's sake
 * (see jobClaim in claims.ts); the jobs table is aliased `j`.
 */
export const IN_UNRESTRICTED_QUEUE = `CASE WHEN j.queue = ANY(ARRAY(SELECT name FROM {{schema}}.queue_settings
                 WHERE paused OR concurrency_limit IS NOT NULL OR rate_limit IS NOT NULL
                 UNION ALL SELECT k.queue FROM {{schema}}.key_limits AS k WHERE k.limit_key = '')) THEN false ELSE true END`;

/**
 * What every claim returns: a ClaimedJob's columns (rowToClaimedJob), not the
 * whole row. How long the job waited is one number, not two timestamps for
 * the client to parse into Dates and subtract.
 */
export const CLAIMED_COLUMNS = `id, tenant, queue, kind, payload, attempts, max_attempts, current_execution_id, idempotency_key, waited_ms`;

// COMMIT_WITHOUT_WAITING lets a claim commit without waiting for its WAL to
// reach the disk. That wait (an fsync) is most of a claim's time, and it lies
// on every job's path from enqueue to handler. Nothing durable is given up: a claim lost in a server crash
// leaves the job queued as it was, so it runs again (at least once, as after
// any crash); the first worker's completion finds no execution of its own and
// writes nothing (fenced). Every synchronous commit after it (enqueues,
// completions) flushes its WAL too.

// Execution ids come from the worker ($6), paired with the claimed rows by
// unnest(): generated here, by uuid_v7() (which draws on gen_random_uuid()),
// they would be a large share of the server's time per claimed row, where
// the worker makes them for almost nothing. The worker's own claims send about
// as many as the last claim took (CLAIM_MIN_FRESH_IDS), not one per row of
// the limit, and the rare row beyond them takes uuid_v7().

/**
 * Turns the ids in CTE `claimable` into running jobs; ends in CTE `claimed`.
 * The attempt lives on the job row (execution id, attempt number, worker,
 * started_at) until the statement that ends it writes its job_executions
 * row (attempts.ts), so a claim writes nothing else. $6 is uuid[] of fresh
 * execution ids, paired with the claimed rows in order; a row beyond them
 * takes one from uuid_v7().
 */
export const CLAIM_ROWS = `
, claimed AS (
  UPDATE {{schema}}.jobs AS j SET
    status = 'running',
    attempts = j.attempts + 1,
    locked_by = $1,
    current_execution_id = coalesce(fresh.execution_id, {{schema}}.uuid_v7()),
    lease_expires_at = statement_timestamp() + $5::float8 * interval '1 millisecond',
    started_at = statement_timestamp(),
    updated_at = statement_timestamp()
  FROM unnest(ARRAY(SELECT id FROM claimable), $6::uuid[]) AS fresh(id, execution_id)
  WHERE j.id = ANY(ARRAY(SELECT id FROM claimable)) AND j.id = fresh.id AND ${COMMIT_WITHOUT_WAITING}
  RETURNING j.id, j.tenant, j.queue, j.kind, j.payload, j.attempts, j.max_attempts, j.current_execution_id, j.idempotency_key,
            (extract(epoch FROM j.started_at - j.run_at) * 1000)::float8 AS waited_ms, j.priority, j.run_at
)`;
