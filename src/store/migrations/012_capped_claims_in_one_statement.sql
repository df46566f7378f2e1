-- The claims that honour a queue's or a tenant's cap, each one statement.
--
-- A cap is exact because its claims queue on one lock (the queue's settings
-- row, or every capped tenant's) and count the running jobs only once they
-- hold it: under READ COMMITTED a statement's snapshot is taken before it
-- waits on a lock, so the count and the claim must be later statements than
-- the lock, in the same transaction. Sent as separate statements (BEGIN,
-- lock, claim, COMMIT) that transaction stayed open between round trips: a
-- worker frozen, partitioned or killed with its host between them kept the
-- lock, and every other worker's capped claims, and the claim rounds behind
-- them, waited on it for as long as the server kept the dead session
-- (hours, under default TCP settings).
--
-- Here the lock, the count and the claim are statements of one function
-- called in one autocommit statement. The client's call is one write; from
-- then on the server runs the whole transaction and commits it whatever
-- the client does, so the lock is held for the function's own run (a few
-- ms). Only a client that never reads a large answer can hold it longer;
-- tcp_user_timeout (set by Conveyor's pools) bounds that.
--
-- A claim waits at most p_lock_timeout_ms for the lock (something else may
-- hold the row: an open transaction in psql, say), then fails with
-- lock_not_available (55P03); the worker counts it, logs it, and claims from
-- its other queues. Each claim is planned for its values at every call
-- (EXECUTE), as the claims the worker sends itself are (store/queries.ts):
-- a plan reused without the LIMIT read far more rows.
--
-- Times (claim_time in each claim) are the clock when the claim statement
-- began, after the lock and its snapshot were taken, not
-- statement_timestamp(), which is when the call began, before any wait:
-- two claims would otherwise record starts out of the order in which they
-- held the lock, and a job claimed after another's completion had committed
-- could appear to have started before that completion's finish time. The claims' text is kept in step with
-- src/store/sql/claims.ts and claim-fragments.ts (the columns a claim
-- returns, how it records the attempt).

-- Claim from one limited queue: lock its settings row, then claim within its
-- concurrency cap and rate window (the window is counted in the same
-- statement). A paused queue, or one whose limits were removed, yields nothing.
CREATE FUNCTION {{schema}}.job_claim_from_limited_queue(
  p_worker_id text, p_limit integer, p_kinds text[], p_queue text, p_lease_ms float8, p_execution_ids uuid[], p_lock_timeout_ms integer)
RETURNS TABLE (id uuid, tenant text, queue text, kind text, payload jsonb, attempts integer, max_attempts integer,
               current_execution_id uuid, idempotency_key text, waited_ms float8)
LANGUAGE plpgsql VOLATILE AS $fn$
BEGIN
  PERFORM set_config('lock_timeout', p_lock_timeout_ms || 'ms', true);
  PERFORM 1 FROM {{schema}}.queue_settings AS s WHERE s.name = p_queue FOR UPDATE;
  RETURN QUERY EXECUTE $claim$
    WITH claim_time AS MATERIALIZED (SELECT clock_timestamp() AS at), settings AS (
      SELECT s.name, s.concurrency_limit, s.rate_limit, s.window_count,
             s.rate_limit IS NOT NULL AND (s.window_started_at IS NULL
               OR s.window_started_at + s.rate_interval_ms * interval '1 millisecond' <= (SELECT at FROM claim_time)) AS window_new
      FROM {{schema}}.queue_settings AS s
      WHERE s.name = $4 AND NOT s.paused AND (s.concurrency_limit IS NOT NULL OR s.rate_limit IS NOT NULL)
    ), allowance AS (
      SELECT greatest(0, least(
        $2::int,
        coalesce(st.concurrency_limit
                 - (SELECT count(*)::int FROM {{schema}}.jobs AS r WHERE r.status = 'running' AND r.queue = $4), $2::int),
        CASE WHEN st.rate_limit IS NULL THEN $2::int
             WHEN st.window_new THEN st.rate_limit
             ELSE st.rate_limit - st.window_count END)) AS n
      FROM settings AS st
    ), claimable AS (
      SELECT id FROM {{schema}}.jobs
      WHERE status IN ('queued', 'retrying') AND run_at <= (SELECT at FROM claim_time)
        AND kind = ANY($3::text[]) AND queue = $4
      ORDER BY priority, run_at, id
      LIMIT coalesce((SELECT n FROM allowance), 0)
      FOR UPDATE SKIP LOCKED
    )
    , claimed AS (
      UPDATE {{schema}}.jobs AS j SET
        status = 'running',
        attempts = j.attempts + 1,
        locked_by = $1,
        current_execution_id = coalesce(fresh.execution_id, {{schema}}.uuid_v7()),
        lease_expires_at = (SELECT at FROM claim_time) + $5::float8 * interval '1 millisecond',
        started_at = (SELECT at FROM claim_time),
        updated_at = (SELECT at FROM claim_time)
      FROM unnest(ARRAY(SELECT id FROM claimable), $6::uuid[]) AS fresh(id, execution_id)
      WHERE j.id = ANY(ARRAY(SELECT id FROM claimable)) AND j.id = fresh.id AND (SELECT set_config('synchronous_commit', 'off', true)) = 'off'
      RETURNING j.id, j.tenant, j.queue, j.kind, j.payload, j.attempts, j.max_attempts, j.current_execution_id, j.idempotency_key,
                (extract(epoch FROM j.started_at - j.run_at) * 1000)::float8 AS waited_ms, j.priority, j.run_at
    ), recorded AS (
      INSERT INTO {{schema}}.job_executions (id, job_id, attempt, worker_id, started_at)
      SELECT current_execution_id, id, attempts, $1, (SELECT at FROM claim_time) FROM claimed
    ), counted AS (
      UPDATE {{schema}}.queue_settings AS s SET
        window_started_at = CASE WHEN st.window_new THEN (SELECT at FROM claim_time) ELSE s.window_started_at END,
        window_count = CASE WHEN st.window_new THEN 0 ELSE s.window_count END + (SELECT count(*)::int FROM claimed)
      FROM settings AS st
      WHERE s.name = st.name AND st.rate_limit IS NOT NULL AND EXISTS (SELECT 1 FROM claimed)
    )
    SELECT id, tenant, queue, kind, payload, attempts, max_attempts, current_execution_id, idempotency_key, waited_ms FROM claimed ORDER BY priority, run_at, id
  $claim$ USING p_worker_id, p_limit, p_kinds, p_queue, p_lease_ms, p_execution_ids;
END
$fn$;

-- Tenant-fair claim over the queues without limits: lock every capped
-- tenant's settings row (in tenant order), then claim, fewest running first,
-- each tenant within its cap (see jobClaimFair's comment in sql/claims-limited.ts).
CREATE FUNCTION {{schema}}.job_claim_fair(
  p_worker_id text, p_limit integer, p_kinds text[], p_queues text[], p_lease_ms float8, p_execution_ids uuid[], p_lock_timeout_ms integer)
RETURNS TABLE (id uuid, tenant text, queue text, kind text, payload jsonb, attempts integer, max_attempts integer,
               current_execution_id uuid, idempotency_key text, waited_ms float8)
LANGUAGE plpgsql VOLATILE AS $fn$
BEGIN
  PERFORM set_config('lock_timeout', p_lock_timeout_ms || 'ms', true);
  PERFORM 1 FROM {{schema}}.tenant_settings AS s WHERE s.concurrency_limit IS NOT NULL ORDER BY s.tenant FOR UPDATE;
  RETURN QUERY EXECUTE $claim$
    WITH RECURSIVE claim_time AS MATERIALIZED (SELECT clock_timestamp() AS at), tenants AS (
      (SELECT j.tenant FROM {{schema}}.jobs AS j
       WHERE j.status IN ('queued', 'retrying') ORDER BY j.tenant LIMIT 1)
      UNION ALL
      SELECT (SELECT j.tenant FROM {{schema}}.jobs AS j
              WHERE j.status IN ('queued', 'retrying') AND j.tenant > t.tenant ORDER BY j.tenant LIMIT 1)
      FROM tenants AS t WHERE t.tenant IS NOT NULL
    ), running_by_tenant AS (
      SELECT r.tenant, count(*)::int AS n FROM {{schema}}.jobs AS r WHERE r.status = 'running' GROUP BY r.tenant
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
        WHERE j.status IN ('queued', 'retrying') AND j.tenant = room.tenant AND j.run_at <= (SELECT at FROM claim_time)
          AND j.kind = ANY($3::text[])
          AND ($4::text[] IS NULL OR j.queue = ANY($4::text[]))
          AND CASE WHEN j.queue = ANY(ARRAY(SELECT name FROM {{schema}}.queue_settings
                     WHERE paused OR concurrency_limit IS NOT NULL OR rate_limit IS NOT NULL)) THEN false ELSE true END
        ORDER BY j.priority, j.run_at, j.id
        LIMIT least(room.n, $2::int)
      ) AS c
    ), chosen AS (
      SELECT id FROM candidates ORDER BY position, priority, run_at, id LIMIT $2
    ), claimable AS (
      -- Locking re-checks the row: one claimed elsewhere since the snapshot is skipped or no longer ready.
      SELECT id FROM {{schema}}.jobs
      WHERE id = ANY(ARRAY(SELECT id FROM chosen)) AND status IN ('queued', 'retrying')
      FOR UPDATE SKIP LOCKED
    )
    , claimed AS (
      UPDATE {{schema}}.jobs AS j SET
        status = 'running',
        attempts = j.attempts + 1,
        locked_by = $1,
        current_execution_id = coalesce(fresh.execution_id, {{schema}}.uuid_v7()),
        lease_expires_at = (SELECT at FROM claim_time) + $5::float8 * interval '1 millisecond',
        started_at = (SELECT at FROM claim_time),
        updated_at = (SELECT at FROM claim_time)
      FROM unnest(ARRAY(SELECT id FROM claimable), $6::uuid[]) AS fresh(id, execution_id)
      WHERE j.id = ANY(ARRAY(SELECT id FROM claimable)) AND j.id = fresh.id AND (SELECT set_config('synchronous_commit', 'off', true)) = 'off'
      RETURNING j.id, j.tenant, j.queue, j.kind, j.payload, j.attempts, j.max_attempts, j.current_execution_id, j.idempotency_key,
                (extract(epoch FROM j.started_at - j.run_at) * 1000)::float8 AS waited_ms, j.priority, j.run_at
    ), recorded AS (
      INSERT INTO {{schema}}.job_executions (id, job_id, attempt, worker_id, started_at)
      SELECT current_execution_id, id, attempts, $1, (SELECT at FROM claim_time) FROM claimed
    )
    SELECT id, tenant, queue, kind, payload, attempts, max_attempts, current_execution_id, idempotency_key, waited_ms FROM claimed ORDER BY priority, run_at, id
  $claim$ USING p_worker_id, p_limit, p_kinds, p_queues, p_lease_ms, p_execution_ids;
END
$fn$;
