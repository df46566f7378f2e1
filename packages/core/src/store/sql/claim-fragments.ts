import { setList } from "./job-moves.js";
import { statusWrites } from "./status-writes.js";
import { COMMIT_WITHOUT_WAITING } from "./transaction-settings.js";

// Pieces of SQL that every claim statement shares (claims.ts, claims-limited.ts).
// Not statements themselves, so this module is not among the store's queries.
// Times are statement_timestamp(): the same as now() in the fast claim's
// single-statement transaction, and right in the limited claims' transactions
// (see claims-limited.ts).

/**
 * True for a job whose queue is neither paused nor limited, by queue or by
 * key (a key-limited queue has a default row, limit_key '', in key_limits). CASE rather than `queue <> ALL(…)` for the planner's sake
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

/** Where a claim's parameters come from: placeholders (`$1`) or PL/pgSQL names, and the claim's time. */
export interface ClaimInputs {
  /** The claiming worker's id (text). */
  workerId: string;
  /** The lease in milliseconds (float8). */
  leaseMs: string;
  /** Fresh execution ids (uuid[]), paired with the claimed rows in order. */
  executionIds: string;
  /** The claim's time: started_at, and the base of the lease. */
  at: string;
}

/** The parameters of the claims the worker sends itself (claims.ts), timed by their statement. */
export const STATEMENT_CLAIM: ClaimInputs = { workerId: "$1", leaseMs: "$5", executionIds: "$6", at: "statement_timestamp()" };

/**
 * The claim's time inside a claim function, read once: the clock when the
 * claim statement began, after its lock and snapshot were taken, so claims
 * record starts in the order in which they held the lock.
 */
export const CLAIM_TIME = "claim_time AS MATERIALIZED (SELECT clock_timestamp() AS at)";

/** The parameters of a claim function's statement run by EXECUTE … USING, timed by CLAIM_TIME. */
export const EXECUTED_CLAIM: ClaimInputs = { workerId: "$1", leaseMs: "$5", executionIds: "$6", at: "(SELECT at FROM claim_time)" };

/**
 * Turns the ids in CTE `claimable` into running jobs; ends in CTE `claimed`.
 * Every claim, the worker's own and the claim functions', takes its jobs
 * through this one statement. The attempt lives on the job row (execution
 * id, attempt number, worker, started_at) until the statement that ends it
 * writes its job_executions row (attempts.ts), so a claim writes nothing
 * else. A row beyond the fresh execution ids takes one from uuid_v7().
 */
export function claimRows(inputs: ClaimInputs): string {
  return `
, claimed AS (
  UPDATE {{schema}}.jobs_live AS j SET
    ${setList(
      statusWrites("claim", {
        lease: { workerId: inputs.workerId, executionId: "coalesce(fresh.execution_id, {{schema}}.uuid_v7())", leaseMs: inputs.leaseMs },
        at: inputs.at,
      }),
    )}
  FROM unnest(ARRAY(SELECT id FROM claimable), ${inputs.executionIds}::uuid[]) AS fresh(id, execution_id)
  WHERE j.id = ANY(ARRAY(SELECT id FROM claimable)) AND j.id = fresh.id AND ${COMMIT_WITHOUT_WAITING}
  RETURNING j.id, j.tenant, j.queue, j.kind, j.payload, j.attempts, j.max_attempts, j.current_execution_id, j.idempotency_key,
            (extract(epoch FROM j.started_at - j.run_at) * 1000)::float8 AS waited_ms, j.priority, j.run_at, j.limit_key
)`;
}
