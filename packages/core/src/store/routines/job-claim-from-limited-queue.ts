import { CLAIM_TIME, CLAIMED_COLUMNS, claimRows, EXECUTED_CLAIM } from "../sql/claim-fragments.js";
import { READY, STATE } from "../sql/status-sets.js";
import type { Routine } from "./routine.js";

/**
 * Claim from one limited queue: lock its settings row, then claim within its
 * concurrency cap and rate window (the window is counted in the same
 * statement). A paused queue, or one whose limits were removed, yields
 * nothing; so does a queue with limits per key, which job_claim_by_key
 * claims within both its key limits and these.
 *
 * A cap is exact because its claims queue on one lock (the queue's settings
 * row here, every capped tenant's in job_claim_fair) and count the running
 * jobs only once they hold it: under READ COMMITTED a statement's snapshot
 * is taken before it waits on a lock, so the count and the claim are later
 * statements than the lock, in the same transaction. They are statements of
 * one function called in one autocommit statement, so the server runs the
 * whole transaction to its commit whatever the client does, and a worker
 * that freezes or vanishes mid-claim never holds the lock (tcp_user_timeout,
 * set by Conveyor's pools, bounds a client that never reads the answer).
 *
 * The lock is waited on for at most p_lock_timeout_ms, then the claim fails
 * with lock_not_available (55P03); the worker counts it, logs it, and claims
 * from its other queues. The claim is planned for its values at every call
 * (EXECUTE), as the worker's own claims are (store/queries.ts). Its time
 * (claim_time) is the clock after the lock and snapshot were taken, so that
 * claims record starts in the order in which they held the lock.
 */
export const jobClaimFromLimitedQueue: Routine = {
  name: "job_claim_from_limited_queue",
  sql: `
CREATE OR REPLACE FUNCTION {{schema}}.job_claim_from_limited_queue(
  p_worker_id text, p_limit integer, p_kinds text[], p_queue text, p_lease_ms float8, p_execution_ids uuid[], p_lock_timeout_ms integer)
RETURNS TABLE (id uuid, tenant text, queue text, kind text, payload jsonb, attempts integer, max_attempts integer,
               current_execution_id uuid, idempotency_key text, waited_ms float8)
LANGUAGE plpgsql VOLATILE AS $fn$
BEGIN
  PERFORM set_config('lock_timeout', p_lock_timeout_ms || 'ms', true);
  PERFORM 1 FROM {{schema}}.queue_settings AS s WHERE s.name = p_queue FOR UPDATE;
  RETURN QUERY EXECUTE $claim$
    WITH ${CLAIM_TIME}, settings AS (
      SELECT s.name, s.concurrency_limit, s.rate_limit, s.window_count,
             s.rate_limit IS NOT NULL AND (s.window_started_at IS NULL
               OR s.window_started_at + s.rate_interval_ms * interval '1 millisecond' <= (SELECT at FROM claim_time)) AS window_new
      FROM {{schema}}.queue_settings AS s
      WHERE s.name = $4 AND NOT s.paused AND (s.concurrency_limit IS NOT NULL OR s.rate_limit IS NOT NULL)
        AND NOT EXISTS (SELECT 1 FROM {{schema}}.key_limits AS d WHERE d.queue = $4 AND d.limit_key = '')
    ), allowance AS (
      SELECT greatest(0, least(
        $2::int,
        coalesce(st.concurrency_limit
                 - (SELECT count(*)::int FROM {{schema}}.jobs AS r WHERE r.status = ${STATE.running} AND r.queue = $4), $2::int),
        CASE WHEN st.rate_limit IS NULL THEN $2::int
             WHEN st.window_new THEN st.rate_limit
             ELSE st.rate_limit - st.window_count END)) AS n
      FROM settings AS st
    ), claimable AS (
      SELECT id FROM {{schema}}.jobs
      WHERE status IN (${READY}) AND run_at <= (SELECT at FROM claim_time)
        AND kind = ANY($3::text[]) AND queue = $4
      ORDER BY priority, run_at, id
      LIMIT coalesce((SELECT n FROM allowance), 0)
      FOR UPDATE SKIP LOCKED
    )${claimRows(EXECUTED_CLAIM)}, counted AS (
      UPDATE {{schema}}.queue_settings AS s SET
        window_started_at = CASE WHEN st.window_new THEN (SELECT at FROM claim_time) ELSE s.window_started_at END,
        window_count = CASE WHEN st.window_new THEN 0 ELSE s.window_count END + (SELECT count(*)::int FROM claimed)
      FROM settings AS st
      WHERE s.name = st.name AND st.rate_limit IS NOT NULL AND EXISTS (SELECT 1 FROM claimed)
    )
    SELECT ${CLAIMED_COLUMNS} FROM claimed ORDER BY priority, run_at, id
  $claim$ USING p_worker_id, p_limit, p_kinds, p_queue, p_lease_ms, p_execution_ids;
END
$fn$;`,
};
