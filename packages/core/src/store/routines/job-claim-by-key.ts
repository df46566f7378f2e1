import { CLAIM_TIME, CLAIMED_COLUMNS, claimRows } from "../sql/claim-fragments.js";
import { EFFECTIVE_KEY_LIMITS } from "../sql/key-limit-fragments.js";
import { READY, STATE } from "../sql/status-sets.js";
import type { Routine } from "./routine.js";

/**
 * Claim from one key-limited queue.
 *
 * 1. Walk up to p_walk keys with ready jobs, starting after the worker's
 *    cursor p_after_key and wrapping around once: round-robin across keys,
 *    so each claim reads p_walk keys, not the backlog, and a key with 10
 *    jobs waits for at most (keys with ready jobs / p_walk) claims of one
 *    worker, whatever another key's backlog.
 * 2. Try each key's lock, a transaction-level advisory lock on (schema and
 *    queue, key): a key another claim is claiming right now is skipped this
 *    time, never waited on, so key claims neither queue behind one another
 *    nor deadlock. Advisory locks live in memory, where a row lock per key
 *    would write every locked row at every claim. A hash collision only
 *    makes two keys skip each other.
 * 3. In a later statement (its snapshot taken after the locks, so it sees
 *    every claim of those keys committed before), count each key's running
 *    jobs and take at most limit − running and what is left of its rate
 *    window, and at most an even share of the claim (the claim's size over
 *    the keys locked). Candidates are ordered by position, the key's
 *    running jobs plus its turn (1st, 2nd… of that key): slots go to the
 *    keys with the fewest jobs running (as in job_claim_fair). Each key's
 *    rows are locked as they are read (FOR UPDATE SKIP LOCKED in the
 *    LATERAL), so the chosen ones need no second pass by id.
 * The statement is static, its plan cached by PL/pgSQL, unlike the capped
 * claims' EXECUTE (job_claim_from_limited_queue): every read here goes through an index by
 * key or id with its bounds taken per key, so a plan made without the
 * values reads no more rows.
 * Jobs without a key in a key-limited queue are not limited by key; they
 * are found among the first 100 ready jobs of the queue, and only when the
 * keys did not fill the claim.
 * A queue that also has queue limits (a concurrency cap or a rate window
 * of its own) is claimed within both: first its settings row is locked, as
 * job_claim_from_limited_queue locks it, so that every claim of the queue
 * queues on that one lock; a later statement (its snapshot taken after the
 * lock) counts the queue's running jobs and its window, and the claim takes
 * at most what is left of them (v_limit), and counts what it took into the
 * queue's window in the same statement as the claim. A job is claimed only
 * if both its key's limits and its queue's allow it.
 * Each row also carries next_key, the last key claimed from in walk order:
 * the worker's cursor for its next claim of this queue (when nothing was
 * claimed, a single row of nulls carries the last key walked).
 */
export const jobClaimByKey: Routine = {
  name: "job_claim_by_key",
  sql: `
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
  v_limit integer := p_limit;
  v_queue_limited boolean;
  v_window_new boolean := false;
BEGIN
  PERFORM set_config('lock_timeout', p_lock_timeout_ms || 'ms', true);
  IF NOT EXISTS (SELECT 1 FROM {{schema}}.key_limits AS d WHERE d.queue = p_queue AND d.limit_key = '')
     OR EXISTS (SELECT 1 FROM {{schema}}.queue_settings AS s WHERE s.name = p_queue AND s.paused) THEN
    RETURN;
  END IF;
  -- Queue limits as well: wait for the queue's lock, then count its room.
  PERFORM 1 FROM {{schema}}.queue_settings AS s
  WHERE s.name = p_queue AND (s.concurrency_limit IS NOT NULL OR s.rate_limit IS NOT NULL)
  FOR UPDATE;
  v_queue_limited := FOUND;
  IF v_queue_limited THEN
    SELECT greatest(0, least(p_limit,
             coalesce(s.concurrency_limit
                      - (SELECT count(*)::int FROM {{schema}}.jobs AS r WHERE r.status = ${STATE.running} AND r.queue = p_queue), p_limit),
             CASE WHEN s.rate_limit IS NULL THEN p_limit
                  WHEN w.window_new THEN s.rate_limit
                  ELSE s.rate_limit - s.window_count END)),
           w.window_new
      INTO v_limit, v_window_new
      FROM {{schema}}.queue_settings AS s
      CROSS JOIN LATERAL (
        SELECT s.rate_limit IS NOT NULL AND (s.window_started_at IS NULL
          OR s.window_started_at + s.rate_interval_ms * interval '1 millisecond' <= clock_timestamp()) AS window_new
      ) AS w
      WHERE s.name = p_queue;
    IF v_limit = 0 THEN
      RETURN;
    END IF;
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
    WITH ${CLAIM_TIME}, walked AS (
      SELECT w.k AS limit_key, w.ord FROM unnest(v_keys::text[]) WITH ORDINALITY AS w(k, ord) WHERE w.k = ANY(v_locked::text[])
    ), limits AS (
      SELECT w.limit_key, w.ord,
             ${EFFECTIVE_KEY_LIMITS}
      FROM walked AS w
      JOIN {{schema}}.key_limits AS d ON d.queue = p_queue AND d.limit_key = ''
      LEFT JOIN {{schema}}.key_limits AS o ON o.queue = p_queue AND o.limit_key = w.limit_key
    ), windows AS MATERIALIZED (
      -- Materialized: inlined into room, its running count ran twice per key.
      SELECT l.*, coalesce(s.window_count, 0) AS window_count,
             (SELECT count(*)::int FROM {{schema}}.jobs AS r
              WHERE r.status = ${STATE.running} AND r.queue = p_queue AND r.limit_key = l.limit_key) AS running,
             l.rate_limit IS NOT NULL AND (s.window_started_at IS NULL
               OR s.window_started_at + l.rate_interval_ms * interval '1 millisecond' <= (SELECT at FROM claim_time)) AS window_new
      FROM limits AS l LEFT JOIN {{schema}}.key_limit_state AS s ON s.queue = p_queue AND s.limit_key = l.limit_key
    ), room AS (
      SELECT w.limit_key, w.ord, w.running, w.rate_limit, w.window_new,
             greatest(0, least(v_limit::int,
               coalesce(w.concurrency_limit - w.running, v_limit::int),
               CASE WHEN w.rate_limit IS NULL THEN v_limit::int
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
        WHERE j.status IN (${READY}) AND j.queue = p_queue AND j.limit_key = room.limit_key
          AND j.run_at <= (SELECT at FROM claim_time) AND j.kind = ANY(p_kinds::text[])
        ORDER BY j.priority, j.run_at, j.id
        LIMIT least(room.n, ceil(v_limit::float8 / greatest(1, cardinality(v_locked::text[])))::int)
        FOR UPDATE SKIP LOCKED
      ) AS c
    ), unkeyed AS (
      SELECT h.id, row_number() OVER (ORDER BY h.priority, h.run_at, h.id) AS position, 0::bigint AS ord, false AS locked
      FROM (
        SELECT j.id, j.priority, j.run_at, j.limit_key FROM {{schema}}.jobs AS j
        WHERE j.status IN (${READY}) AND j.queue = p_queue
          AND j.run_at <= (SELECT at FROM claim_time) AND j.kind = ANY(p_kinds::text[])
        ORDER BY j.priority, j.run_at, j.id
        LIMIT 100
      ) AS h
      WHERE h.limit_key IS NULL AND (SELECT count(*) FROM keyed) < v_limit
    ), chosen AS (
      SELECT c.id, c.locked FROM (SELECT * FROM keyed UNION ALL SELECT * FROM unkeyed) AS c ORDER BY c.position, c.ord LIMIT v_limit
    ), claimable AS (
      SELECT ch.id FROM chosen AS ch WHERE ch.locked
      UNION ALL
      -- Keyless jobs were read unlocked: locking re-checks them.
      SELECT r.id FROM (
        SELECT j.id FROM {{schema}}.jobs AS j
        WHERE j.id = ANY(ARRAY(SELECT ch.id FROM chosen AS ch WHERE NOT ch.locked)) AND j.status IN (${READY})
        FOR UPDATE SKIP LOCKED
      ) AS r
    )${claimRows({ workerId: "p_worker_id", leaseMs: "p_lease_ms", executionIds: "p_execution_ids", at: "(SELECT at FROM claim_time)" })}, counted AS (
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
    ), queue_counted AS (
      -- The queue's own window, under the queue's lock taken above.
      UPDATE {{schema}}.queue_settings AS s SET
        window_started_at = CASE WHEN v_window_new THEN (SELECT at FROM claim_time) ELSE s.window_started_at END,
        window_count = CASE WHEN v_window_new THEN 0 ELSE s.window_count END + (SELECT count(*)::int FROM claimed)
      WHERE v_queue_limited AND s.name = p_queue AND s.rate_limit IS NOT NULL AND EXISTS (SELECT 1 FROM claimed)
    )
    SELECT ${CLAIMED_COLUMNS},
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
$fn$;`,
};
