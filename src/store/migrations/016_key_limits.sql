-- Limits per key (issue #24): a limit key on each job (a customer, a host,
-- any string), and per queue a default limit for every key plus overrides
-- for single keys: the most jobs of one key running at once, and the most
-- starts per fixed window (a throttle is a window of one start).
--
-- What runs where:
-- - jobs.limit_key: set at enqueue (or derived by the job definition).
-- - key_limits: one row per queue with key limits, limit_key '' (the
--   default for every key of the queue, its limits possibly null), plus one
--   row per overridden key. A queue is key-limited exactly when it has the
--   '' row; the fast claim then leaves the queue to job_claim_by_key, as it
--   leaves paused and capped queues to the limited claims.
-- - key_limit_state: the rate window of each (queue, key) that has a rate
--   limit, written by the key claim under the key's lock.
--
-- Running jobs per key are counted from the jobs rows themselves (status
-- 'running', through jobs_running_by_limit_key_idx), never kept in a
-- counter: whatever ends a job (success, failure, cancel, reclaim of a lost
-- lease, shutdown hand-back) changes its status, and with it the count.

ALTER TABLE {{schema}}.jobs ADD COLUMN limit_key text;
-- The column is new, so every row passes: the scan is of NULLs only.
ALTER TABLE {{schema}}.jobs
  ADD CONSTRAINT jobs_limit_key_bounded CHECK (limit_key IS NULL OR length(limit_key) BETWEEN 1 AND 256);

-- The key claim walks the distinct keys with ready jobs of one queue (one
-- probe per key) and takes each key's next jobs in claim order. Partial on
-- keyed jobs: an enqueue without a key writes no entry here.
CREATE INDEX jobs_ready_by_limit_key_idx ON {{schema}}.jobs (queue, limit_key, priority, run_at, id)
  WHERE status IN ('queued', 'retrying') AND limit_key IS NOT NULL;
-- A key's running jobs: at most the workers' total concurrency rows.
CREATE INDEX jobs_running_by_limit_key_idx ON {{schema}}.jobs (queue, limit_key)
  WHERE status = 'running' AND limit_key IS NOT NULL;

CREATE TABLE {{schema}}.key_limits (
  queue              text        NOT NULL,
  -- '' : the default for every key of the queue (keys are never empty).
  limit_key          text        NOT NULL,
  -- Most jobs of one key running at once, across every worker.
  concurrency_limit  integer,
  -- Fixed window per key: at most rate_limit starts per rate_interval_ms.
  rate_limit         integer,
  rate_interval_ms   integer,
  updated_at         timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (queue, limit_key),
  CONSTRAINT key_limits_queue_bounded CHECK (length(queue) BETWEEN 1 AND 128),
  CONSTRAINT key_limits_key_bounded CHECK (length(limit_key) <= 256),
  CONSTRAINT key_limits_concurrency_positive CHECK (concurrency_limit IS NULL OR concurrency_limit >= 1),
  CONSTRAINT key_limits_rate_complete CHECK ((rate_limit IS NULL) = (rate_interval_ms IS NULL)),
  CONSTRAINT key_limits_rate_positive CHECK (rate_limit IS NULL OR (rate_limit >= 1 AND rate_interval_ms >= 1))
);
-- The key-limited queues, read by every fast claim (one InitPlan): the
-- default rows only, however many keys are overridden.
CREATE INDEX key_limits_queues_idx ON {{schema}}.key_limits (queue) WHERE limit_key = '';

CREATE TABLE {{schema}}.key_limit_state (
  queue              text        NOT NULL,
  limit_key          text        NOT NULL,
  window_started_at  timestamptz,
  window_count       integer     NOT NULL DEFAULT 0,
  PRIMARY KEY (queue, limit_key),
  CONSTRAINT key_limit_state_window_count_nonnegative CHECK (window_count >= 0)
);

-- The distinct keys with ready jobs in one queue, in key order, after
-- p_after (exclusive) and up to p_until (inclusive; null: no end), at most
-- p_count of them: a loose index scan of jobs_ready_by_limit_key_idx, one
-- probe per key, however many jobs each key has waiting.
CREATE FUNCTION {{schema}}.job_limit_keys_ready(p_queue text, p_after text, p_until text, p_count integer)
RETURNS SETOF text LANGUAGE sql STABLE AS $fn$
  WITH RECURSIVE walk AS (
    (SELECT j.limit_key FROM {{schema}}.jobs AS j
     WHERE j.status IN ('queued', 'retrying') AND j.queue = p_queue AND j.limit_key > p_after
     ORDER BY j.limit_key LIMIT 1)
    UNION ALL
    SELECT (SELECT j.limit_key FROM {{schema}}.jobs AS j
            WHERE j.status IN ('queued', 'retrying') AND j.queue = p_queue AND j.limit_key > w.limit_key
            ORDER BY j.limit_key LIMIT 1)
    FROM walk AS w WHERE w.limit_key IS NOT NULL AND (p_until IS NULL OR w.limit_key < p_until)
  )
  SELECT w.limit_key FROM walk AS w
  WHERE w.limit_key IS NOT NULL AND (p_until IS NULL OR w.limit_key <= p_until)
  LIMIT p_count
$fn$;

-- Claim from one key-limited queue.
--
-- 1. Walk up to p_walk keys with ready jobs, starting after the worker's
--    cursor p_after_key and wrapping around once: round-robin across keys,
--    so each claim reads p_walk keys, not the backlog, and a key with 10
--    jobs waits for at most (keys with ready jobs / p_walk) claims of one
--    worker, whatever another key's backlog.
-- 2. Try each key's lock, a transaction-level advisory lock on (schema and
--    queue, key): a key another claim is claiming right now is skipped this
--    time, never waited on, so key claims neither queue behind one another
--    nor deadlock. Advisory locks live in memory: row locks on a state row
--    per key wrote every locked row (WAL, dirty pages) at every claim, and
--    with 200 keys per claim the key claim ran at a third of the fast
--    claim's rate. A hash collision only makes two keys skip each other.
-- 3. In a later statement (its snapshot taken after the locks, so it sees
--    every claim of those keys committed before), count each key's running
--    jobs and take at most limit − running and what is left of its rate
--    window, and at most an even share of the claim (the claim's size over
--    the keys locked). Candidates are ordered by position, the key's
--    running jobs plus its turn (1st, 2nd… of that key): slots go to the
--    keys with the fewest jobs running (as in job_claim_fair). Each key's
--    rows are locked as they are read (FOR UPDATE SKIP LOCKED in the
--    LATERAL), so the chosen ones need no second pass by id.
-- The statement is static, its plan cached by PL/pgSQL, unlike the capped
-- claims' EXECUTE (migration 012): every read here goes through an index by
-- key or id with its bounds taken per key, so a plan made without the
-- values reads no more rows (20 calls in a row cost the same as the first).
-- Jobs without a key in a key-limited queue are not limited by key; they
-- are found among the first 100 ready jobs of the queue, and only when the
-- keys did not fill the claim.
-- Each row also carries next_key, the last key claimed from in walk order:
-- the worker's cursor for its next claim of this queue (when nothing was
-- claimed, a single row of nulls carries the last key walked).
CREATE FUNCTION {{schema}}.job_claim_by_key(
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
    ), recorded AS (
      INSERT INTO {{schema}}.job_executions (id, job_id, attempt, worker_id, started_at)
      SELECT current_execution_id, id, attempts, p_worker_id, (SELECT at FROM claim_time) FROM claimed
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

-- The tenant-fair claim (migration 012) leaves key-limited queues to
-- job_claim_by_key, as it leaves paused and capped queues to their claims:
-- the same function with the key-limited queues added to its exclusion.
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
    ), recorded AS (
      INSERT INTO {{schema}}.job_executions (id, job_id, attempt, worker_id, started_at)
      SELECT current_execution_id, id, attempts, $1, (SELECT at FROM claim_time) FROM claimed
    )
    SELECT id, tenant, queue, kind, payload, attempts, max_attempts, current_execution_id, idempotency_key, waited_ms FROM claimed ORDER BY priority, run_at, id
  $claim$ USING p_worker_id, p_limit, p_kinds, p_queues, p_lease_ms, p_execution_ids;
END
$fn$;
