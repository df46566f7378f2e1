import { CLAIM_TIME, CLAIMED_COLUMNS, claimRows, EXECUTED_CLAIM, IN_UNRESTRICTED_QUEUE } from "../sql/claim-fragments.js";
import { READY, STATE } from "../sql/status-sets.js";
import type { Routine } from "./routine.js";

/**
 * Tenant-fair claim over the queues without limits: lock every capped
 * tenant's settings row (in tenant order), then claim, fewest running first,
 * each tenant within its cap (see jobClaimFair in sql/claims-limited.ts, and
 * job_claim_from_limited_queue for why a function).
 */
export const jobClaimFair: Routine = {
  name: "job_claim_fair",
  sql: `
CREATE OR REPLACE FUNCTION {{schema}}.job_claim_fair(
  p_worker_id text, p_limit integer, p_kinds text[], p_queues text[], p_lease_ms float8, p_execution_ids uuid[], p_lock_timeout_ms integer)
RETURNS TABLE (id uuid, tenant text, queue text, kind text, payload jsonb, attempts integer, max_attempts integer,
               current_execution_id uuid, idempotency_key text, waited_ms float8)
LANGUAGE plpgsql VOLATILE AS $fn$
BEGIN
  PERFORM set_config('lock_timeout', p_lock_timeout_ms || 'ms', true);
  PERFORM 1 FROM {{schema}}.tenant_settings AS s WHERE s.concurrency_limit IS NOT NULL ORDER BY s.tenant FOR UPDATE;
  RETURN QUERY EXECUTE $claim$
    WITH RECURSIVE ${CLAIM_TIME}, tenants AS (
      (SELECT j.tenant FROM {{schema}}.jobs AS j
       WHERE j.status IN (${READY}) ORDER BY j.tenant LIMIT 1)
      UNION ALL
      SELECT (SELECT j.tenant FROM {{schema}}.jobs AS j
              WHERE j.status IN (${READY}) AND j.tenant > t.tenant ORDER BY j.tenant LIMIT 1)
      FROM tenants AS t WHERE t.tenant IS NOT NULL
    ), running_by_tenant AS (
      SELECT r.tenant, count(*)::int AS n FROM {{schema}}.jobs AS r WHERE r.status = ${STATE.running} GROUP BY r.tenant
    ), room AS (
      SELECT t.tenant, coalesce(rt.n, 0) AS running,
             CASE WHEN ts.concurrency_limit IS NULL THEN $2::int
                  ELSE greatest(0, ts.concurrency_limit - coalesce(rt.n, 0)) END AS n
      FROM tenants AS t
      LEFT JOIN running_by_tenant AS rt ON rt.tenant = t.tenant
      LEFT JOIN {{schema}}.tenant_settings AS ts ON ts.tenant = t.tenant
      WHERE t.tenant IS NOT NULL
    ), candidates AS (
      SELECT c.id, c.priority, c.run_at, room.running + c.turn AS position
      FROM room CROSS JOIN LATERAL (
        SELECT j.id, j.priority, j.run_at, row_number() OVER (ORDER BY j.priority, j.run_at, j.id) AS turn
        FROM {{schema}}.jobs AS j
        WHERE j.status IN (${READY}) AND j.tenant = room.tenant AND j.run_at <= (SELECT at FROM claim_time)
          AND j.kind = ANY($3::text[])
          AND ($4::text[] IS NULL OR j.queue = ANY($4::text[]))
          AND ${IN_UNRESTRICTED_QUEUE}
        ORDER BY j.priority, j.run_at, j.id
        LIMIT least(room.n, $2::int)
      ) AS c
    ), chosen AS (
      SELECT id FROM candidates ORDER BY position, priority, run_at, id LIMIT $2
    ), claimable AS (
      -- Locking re-checks the row: one claimed elsewhere since the snapshot is skipped or no longer ready.
      SELECT id FROM {{schema}}.jobs
      WHERE id = ANY(ARRAY(SELECT id FROM chosen)) AND status IN (${READY})
      FOR UPDATE SKIP LOCKED
    )${claimRows(EXECUTED_CLAIM)}
    SELECT ${CLAIMED_COLUMNS} FROM claimed ORDER BY priority, run_at, id
  $claim$ USING p_worker_id, p_limit, p_kinds, p_queues, p_lease_ms, p_execution_ids;
END
$fn$;`,
};
