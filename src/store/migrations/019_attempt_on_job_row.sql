-- The running attempt lives on its job row; its job_executions row is
-- written once, finished, by the statement that ends the attempt.
--
-- A running job already holds all that its attempt's record needs:
-- current_execution_id (the execution's id), attempts (its number),
-- locked_by (the worker) and started_at (the claim's time). So a claim
-- writes the job row alone, and every statement that ends an attempt
-- (success, failure, retry-after, shutdown hand-back, cancel, a reclaimed
-- lease, a completion in the handler's transaction) inserts the record
-- whole, from the rows its fenced update of jobs returned: a stale worker's
-- end matches no job row, so it writes no execution either. Readers see
-- every attempt, running or ended, through the view job_attempts.
--
-- Upgrade in place. A claim made before this migration inserted a 'running'
-- execution row, which stays while its attempt runs, and its id is listed
-- in executions_running_before_019. The view shows that attempt once, from
-- its job row; the statement that ends it inserts it with ON CONFLICT (id)
-- DO UPDATE, so the row is finished in place rather than duplicated, and a
-- worker of the earlier version that ends it updates the row as it always
-- did. Nothing is rewritten, so the migration is as quick on a large store.
--
-- Workers of an earlier version cannot claim once this is applied: the
-- 'running' row their claim inserts is refused (job_executions_ended). Stop
-- them soon after migrating: an attempt claimed from here on has no
-- execution row for their ending statements to update, so one that such a
-- worker ends (its reclaim sweep can) is left unrecorded.

-- Every attempt, oldest first by (started_at, id) when read for one job:
-- the ended ones from job_executions, and the running one of each running
-- job, built from its row (finished_at and error null, outcome 'running').
-- A 'running' row left by a claim from before this migration is its job's
-- running attempt, shown from the job row; the first branch skips it.
-- A filter on job_id reaches job_executions_job_idx and jobs' primary key.
CREATE VIEW {{schema}}.job_attempts AS
  SELECT e.id, e.job_id, e.attempt, e.worker_id, e.started_at, e.finished_at, e.outcome, e.error
  FROM {{schema}}.job_executions AS e
  WHERE e.outcome <> 'running'
  UNION ALL
  SELECT j.current_execution_id, j.id, j.attempts, j.locked_by, j.started_at, NULL::timestamptz, 'running'::text, NULL::jsonb
  FROM {{schema}}.jobs AS j
  WHERE j.status = 'running';

-- Every row written from here on is an ended attempt. NOT VALID, then
-- validated when no row from before breaks it (as 013 does): 'running'
-- rows of attempts claimed before this migration must not stop the
-- upgrade, and each is finished in place when its attempt ends. Once none
-- is left,
--   ALTER TABLE <schema>.job_executions VALIDATE CONSTRAINT job_executions_ended;
-- validates it under a lock that lets claims and completions go on.
ALTER TABLE {{schema}}.job_executions
  ADD CONSTRAINT job_executions_ended CHECK (finished_at IS NOT NULL) NOT VALID;

-- The executions running now, each finished in place by the statement that
-- ends its attempt (src/store/sql/attempt-fragments.ts attemptRecord).
-- Listed after the constraint above: adding it waited for every claim
-- inserting a row to commit and holds off the rest until this migration
-- commits, after which the constraint refuses them; so the list is
-- complete, and never grows.
CREATE TABLE {{schema}}.executions_running_before_019 (id uuid PRIMARY KEY);
INSERT INTO {{schema}}.executions_running_before_019 (id)
  SELECT id FROM {{schema}}.job_executions WHERE outcome = 'running';

DO $$
BEGIN
  ALTER TABLE {{schema}}.job_executions VALIDATE CONSTRAINT job_executions_ended;
EXCEPTION WHEN check_violation THEN
  RAISE NOTICE 'job_executions_ended left NOT VALID: attempts claimed before migration 019 are still running';
END
$$;

-- Rows are inserted whole and never updated on the way of a job (only a
-- 'running' row from before this migration is, once), so pages are packed
-- full again: the free space migration 007 kept for the end-of-attempt
-- update would now only double the heap. Pages filled from now on.
ALTER TABLE {{schema}}.job_executions SET (fillfactor = 100);

-- The claims of migrations 012 and 016, the same but for the execution row
-- they no longer insert (src/store/sql/claim-fragments.ts CLAIM_ROWS is in
-- step). Each still sets started_at on the job row to the claim's time,
-- which becomes the execution's started_at when the attempt ends.

-- Claim from one limited queue (migration 012).
CREATE OR REPLACE FUNCTION {{schema}}.job_claim_from_limited_queue(
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

-- Claim from one key-limited queue (migration 016).
CREATE OR REPLACE FUNCTION {{schema}}.job_claim_by_key(
  p_worker_id text, p_limit integer, p_kinds text[], p_queue text, p_lease_ms float8, p_execution_ids uuid[],
  p_lock_timeout_ms integer, p_after_key text, p_walk integer)
RETURNS TABLE (id uuid, tenant text, queue text, kind text, payload jsonb, attempts integer, max_attempts integer,
               current_execution_id uuid, idempotency_key text, waited_ms float8, next_key text)
LANGUAGE plpgsql VOLATILE AS $fn$
#variable_conflict use_column
DECLARE
  v_keys text[];
  v_locked text[];
BEGIN
  PERFORM set_config('lock_timeout', p_lock_timeout_ms || 'ms', true);
  IF NOT EXISTS (SELECT 1 FROM {{schema}}.key_limits AS d WHERE d.queue = p_queue AND d.limit_key = '')
     OR EXISTS (SELECT 1 FROM {{schema}}.queue_settings AS s WHERE s.name = p_queue AND s.paused) THEN
    RETURN;
  END IF;
  v_keys := ARRAY(SELECT k FROM {{schema}}.job_limit_keys_ready(p_queue, coalesce(p_after_key, ''), NULL, p_walk) AS k);
  IF cardinality(v_keys) < p_walk AND p_after_key IS NOT NULL THEN
    v_keys := v_keys || ARRAY(SELECT k FROM {{schema}}.job_limit_keys_ready(p_queue, '', p_after_key, p_walk - cardinality(v_keys)) AS k);
  END IF;
  -- Try each key's lock; a key another claim holds is skipped, never waited
  -- on (so the order in which they are taken cannot deadlock).
  v_locked := ARRAY(SELECT k FROM unnest(v_keys) AS k
                    WHERE pg_try_advisory_xact_lock(hashtext('{{schema}}' || p_queue), hashtext(k)));
  RETURN QUERY
    WITH claim_time AS MATERIALIZED (SELECT clock_timestamp() AS at), walked AS (
      SELECT w.k AS limit_key, w.ord FROM unnest(v_keys::text[]) WITH ORDINALITY AS w(k, ord) WHERE w.k = ANY(v_locked::text[])
    ), limits AS (
      SELECT w.limit_key, w.ord,
             CASE WHEN o.limit_key IS NULL THEN d.concurrency_limit ELSE o.concurrency_limit END AS concurrency_limit,
             CASE WHEN o.limit_key IS NULL THEN d.rate_limit ELSE o.rate_limit END AS rate_limit,
             CASE WHEN o.limit_key IS NULL THEN d.rate_interval_ms ELSE o.rate_interval_ms END AS rate_interval_ms
      FROM walked AS w
      JOIN {{schema}}.key_limits AS d ON d.queue = p_queue AND d.limit_key = ''
      LEFT JOIN {{schema}}.key_limits AS o ON o.queue = p_queue AND o.limit_key = w.limit_key
    ), windows AS MATERIALIZED (
      -- Materialized: inlined into room, its running count ran twice per key.
      SELECT l.*, coalesce(s.window_count, 0) AS window_count,
             (SELECT count(*)::int FROM {{schema}}.jobs AS r
              WHERE r.status = 'running' AND r.queue = p_queue AND r.limit_key = l.limit_key) AS running,
             l.rate_limit IS NOT NULL AND (s.window_started_at IS NULL
               OR s.window_started_at + l.rate_interval_ms * interval '1 millisecond' <= (SELECT at FROM claim_time)) AS window_new
      FROM limits AS l LEFT JOIN {{schema}}.key_limit_state AS s ON s.queue = p_queue AND s.limit_key = l.limit_key
    ), room AS (
      SELECT w.limit_key, w.ord, w.running, w.rate_limit, w.window_new,
             greatest(0, least(p_limit::int,
               coalesce(w.concurrency_limit - w.running, p_limit::int),
               CASE WHEN w.rate_limit IS NULL THEN p_limit::int
                    WHEN w.window_new THEN w.rate_limit
                    ELSE w.rate_limit - w.window_count END)) AS n
      FROM windows AS w
    ), keyed AS (
      -- Each key's next jobs, locked as they are read (rows another claim
      -- holds are skipped; a row claimed since the snapshot is re-checked
      -- and skipped), so the chosen ones need no second locking pass.
      SELECT c.id, room.running + row_number() OVER (PARTITION BY room.limit_key ORDER BY c.priority, c.run_at, c.id) AS position,
             room.ord, true AS locked
      FROM room CROSS JOIN LATERAL (
        SELECT j.id, j.priority, j.run_at
        FROM {{schema}}.jobs AS j
        WHERE j.status IN ('queued', 'retrying') AND j.queue = p_queue AND j.limit_key = room.limit_key
          AND j.run_at <= (SELECT at FROM claim_time) AND j.kind = ANY(p_kinds::text[])
        ORDER BY j.priority, j.run_at, j.id
        LIMIT least(room.n, ceil(p_limit::float8 / greatest(1, cardinality(v_locked::text[])))::int)
        FOR UPDATE SKIP LOCKED
      ) AS c
    ), unkeyed AS (
      SELECT h.id, row_number() OVER (ORDER BY h.priority, h.run_at, h.id) AS position, 0::bigint AS ord, false AS locked
      FROM (
        SELECT j.id, j.priority, j.run_at, j.limit_key FROM {{schema}}.jobs AS j
        WHERE j.status IN ('queued', 'retrying') AND j.queue = p_queue
          AND j.run_at <= (SELECT at FROM claim_time) AND j.kind = ANY(p_kinds::text[])
        ORDER BY j.priority, j.run_at, j.id
        LIMIT 100
      ) AS h
      WHERE h.limit_key IS NULL AND (SELECT count(*) FROM keyed) < p_limit
    ), chosen AS (
      SELECT c.id, c.locked FROM (SELECT * FROM keyed UNION ALL SELECT * FROM unkeyed) AS c ORDER BY c.position, c.ord LIMIT p_limit
    ), claimable AS (
      SELECT ch.id FROM chosen AS ch WHERE ch.locked
      UNION ALL
      -- Keyless jobs were read unlocked: locking re-checks them.
      SELECT r.id FROM (
        SELECT j.id FROM {{schema}}.jobs AS j
        WHERE j.id = ANY(ARRAY(SELECT ch.id FROM chosen AS ch WHERE NOT ch.locked)) AND j.status IN ('queued', 'retrying')
        FOR UPDATE SKIP LOCKED
      ) AS r
    ), claimed AS (
      UPDATE {{schema}}.jobs AS j SET
        status = 'running',
        attempts = j.attempts + 1,
        locked_by = p_worker_id,
        current_execution_id = coalesce(fresh.execution_id, {{schema}}.uuid_v7()),
        lease_expires_at = (SELECT at FROM claim_time) + p_lease_ms::float8 * interval '1 millisecond',
        started_at = (SELECT at FROM claim_time),
        updated_at = (SELECT at FROM claim_time)
      FROM unnest(ARRAY(SELECT id FROM claimable), p_execution_ids::uuid[]) AS fresh(id, execution_id)
      WHERE j.id = ANY(ARRAY(SELECT id FROM claimable)) AND j.id = fresh.id AND (SELECT set_config('synchronous_commit', 'off', true)) = 'off'
      RETURNING j.id, j.tenant, j.queue, j.kind, j.payload, j.attempts, j.max_attempts, j.current_execution_id, j.idempotency_key,
                (extract(epoch FROM j.started_at - j.run_at) * 1000)::float8 AS waited_ms, j.priority, j.run_at, j.limit_key
    ), counted AS (
      -- Under the key's lock, so the row read in windows is still current:
      -- a window that ended (window_new) restarts at this claim.
      INSERT INTO {{schema}}.key_limit_state AS s (queue, limit_key, window_started_at, window_count)
      SELECT p_queue, r.limit_key, CASE WHEN r.window_new THEN (SELECT at FROM claim_time) END, c.n
      FROM room AS r JOIN (SELECT cl.limit_key, count(*)::int AS n FROM claimed AS cl GROUP BY cl.limit_key) AS c
        ON c.limit_key = r.limit_key
      WHERE r.rate_limit IS NOT NULL
      ON CONFLICT (queue, limit_key) DO UPDATE SET
        window_started_at = coalesce(EXCLUDED.window_started_at, s.window_started_at),
        window_count = CASE WHEN EXCLUDED.window_started_at IS NULL THEN s.window_count ELSE 0 END + EXCLUDED.window_count
    )
    SELECT id, tenant, queue, kind, payload, attempts, max_attempts, current_execution_id, idempotency_key, waited_ms,
           (SELECT w.k FROM unnest(v_keys::text[]) WITH ORDINALITY AS w(k, ord)
            WHERE w.k IN (SELECT cl.limit_key FROM claimed AS cl) ORDER BY w.ord DESC LIMIT 1) AS next_key
    FROM claimed ORDER BY priority, run_at, id;
  -- Nothing claimed from the keys walked (all at their limits, say): one
  -- row of nulls but next_key, the last key walked, so that the next claim
  -- walks on instead of meeting the same keys again.
  IF NOT FOUND AND cardinality(v_keys) > 0 THEN
    next_key := v_keys[cardinality(v_keys)];
    RETURN NEXT;
  END IF;
END
$fn$;

-- Tenant-fair claim over the queues without limits (migrations 012 and 016).
CREATE OR REPLACE FUNCTION {{schema}}.job_claim_fair(
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
                     WHERE paused OR concurrency_limit IS NOT NULL OR rate_limit IS NOT NULL
                     UNION ALL SELECT k.queue FROM {{schema}}.key_limits AS k WHERE k.limit_key = '')) THEN false ELSE true END
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
    )
    SELECT id, tenant, queue, kind, payload, attempts, max_attempts, current_execution_id, idempotency_key, waited_ms FROM claimed ORDER BY priority, run_at, id
  $claim$ USING p_worker_id, p_limit, p_kinds, p_queues, p_lease_ms, p_execution_ids;
END
$fn$;
