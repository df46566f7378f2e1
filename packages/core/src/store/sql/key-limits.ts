import { EFFECTIVE_KEY_LIMITS, effectiveKeyLimit } from "./key-limit-fragments.js";
import { READY, STATE } from "./status-sets.js";

// Limits per key: a queue's default for every key (the
// key_limits row whose limit_key is ''), overrides for single keys, and what
// a key is doing now. Changes that can let more jobs start wake the queue's
// workers (NOTIFY with the queue's name).

const KEY_LIMIT_COLUMNS = `queue, limit_key, concurrency_limit, rate_limit, rate_interval_ms, updated_at`;

/** The ready statuses, as every claim writes them (so the partial indexes apply). */
const READY_ROW = `status IN (${READY})`;

/**
 * A key's limits in one queue, as the key claim applies them (job_claim_by_key):
 * the override's row when the key has one, else the default's. Needs the
 * default row aliased `d` and the override's `o`.
 */
const EFFECTIVE_LIMITS = `
  ${EFFECTIVE_KEY_LIMITS},
  CASE WHEN o.limit_key IS NOT NULL THEN 'override' WHEN d.limit_key IS NOT NULL THEN 'default' ELSE 'none' END AS source`;

/**
 * Set the limits of every key of a queue ($2 = '') or of one key; a field
 * whose "set" flag is false keeps its value, null clears it. An override
 * makes the queue key-limited too (its default row, with no limits, is
 * created when missing). Changing a rate limit starts fresh windows for the
 * keys it applies to. Wakes the queue's workers.
 * $1 queue, $2 key ('' for the queue's default), $3 set concurrency boolean, $4 concurrency|null,
 * $5 set rate boolean, $6 rate count|null, $7 rate interval ms|null, $8 notification channel
 */
export const keyLimitsSet = `
WITH queue_default AS (
  INSERT INTO {{schema}}.key_limits (queue, limit_key) SELECT $1, '' WHERE $2::text <> ''
  ON CONFLICT (queue, limit_key) DO NOTHING
), saved AS (
  INSERT INTO {{schema}}.key_limits (queue, limit_key, concurrency_limit, rate_limit, rate_interval_ms)
  VALUES ($1, $2, CASE WHEN $3::boolean THEN $4::int END, CASE WHEN $5::boolean THEN $6::int END,
          CASE WHEN $5::boolean THEN $7::int END)
  ON CONFLICT (queue, limit_key) DO UPDATE SET
    concurrency_limit = CASE WHEN $3::boolean THEN $4::int ELSE {{schema}}.key_limits.concurrency_limit END,
    rate_limit = CASE WHEN $5::boolean THEN $6::int ELSE {{schema}}.key_limits.rate_limit END,
    rate_interval_ms = CASE WHEN $5::boolean THEN $7::int ELSE {{schema}}.key_limits.rate_interval_ms END,
    updated_at = now()
  RETURNING ${KEY_LIMIT_COLUMNS}
), windows AS (
  UPDATE {{schema}}.key_limit_state SET window_started_at = NULL, window_count = 0
  WHERE $5::boolean AND queue = $1 AND ($2::text = '' OR limit_key = $2)
)
SELECT ${KEY_LIMIT_COLUMNS}, pg_notify($8, queue)::text AS notified FROM saved`;

/**
 * Delete one key's override ($2), or every key limit of the queue ($2 null:
 * the queue goes back to the fast claim, its key state rows with it). Wakes
 * the queue's workers. Returns how many rows were deleted.
 * $1 queue, $2 key|null, $3 notification channel
 */
export const keyLimitsDelete = `
WITH deleted AS (
  DELETE FROM {{schema}}.key_limits WHERE queue = $1 AND ($2::text IS NULL OR limit_key = $2) RETURNING queue
), states AS (
  DELETE FROM {{schema}}.key_limit_state WHERE $2::text IS NULL AND queue = $1
)
SELECT count(*)::int AS deleted, CASE WHEN count(*) > 0 THEN pg_notify($3, $1)::text END AS notified FROM deleted`;

/** The key limits of one queue ($1) or of every queue ($1 null), default rows first. $1 queue|null */
export const keyLimitsList = `
SELECT ${KEY_LIMIT_COLUMNS} FROM {{schema}}.key_limits
WHERE $1::text IS NULL OR queue = $1
ORDER BY queue, limit_key`;

/**
 * What one key of a queue is doing now: its limits and where they come
 * from, its running, ready and scheduled jobs, its rate window, and whether
 * the queue is paused. One row. $1 queue, $2 key
 */
export const keyStatusGet = `
WITH limits AS (
  SELECT ${EFFECTIVE_LIMITS}
  FROM (SELECT 1) AS one
  LEFT JOIN {{schema}}.key_limits AS d ON d.queue = $1 AND d.limit_key = ''
  LEFT JOIN {{schema}}.key_limits AS o ON o.queue = $1 AND o.limit_key = $2 AND d.limit_key IS NOT NULL
)
SELECT l.*,
  (SELECT count(*)::int FROM {{schema}}.jobs WHERE status = ${STATE.running} AND queue = $1 AND limit_key = $2) AS running,
  (SELECT count(*)::int FROM {{schema}}.jobs WHERE ${READY_ROW} AND queue = $1 AND limit_key = $2 AND run_at <= now()) AS ready,
  (SELECT count(*)::int FROM {{schema}}.jobs WHERE ${READY_ROW} AND queue = $1 AND limit_key = $2 AND run_at > now()) AS scheduled,
  s.window_started_at, s.window_count,
  coalesce((SELECT q.paused FROM {{schema}}.queue_settings AS q WHERE q.name = $1), false) AS paused,
  now() AS now
FROM limits AS l
LEFT JOIN {{schema}}.key_limit_state AS s ON s.queue = $1 AND s.limit_key = $2`;

/**
 * The keys of a queue with the most jobs waiting (ready or scheduled), with
 * their running jobs and limits. Counts every waiting keyed job of the queue
 * (an index-only scan of jobs_ready_by_limit_key_idx when the table is
 * vacuumed): for the API and the dashboard, not a hot path.
 * $1 queue, $2 how many keys
 */
export const keyTopByWaiting = `
WITH top AS (
  SELECT limit_key, count(*)::int AS waiting FROM {{schema}}.jobs
  WHERE ${READY_ROW} AND queue = $1 AND limit_key IS NOT NULL
  GROUP BY limit_key ORDER BY waiting DESC, limit_key LIMIT $2
)
SELECT t.limit_key, t.waiting,
  (SELECT count(*)::int FROM {{schema}}.jobs AS r WHERE r.status = ${STATE.running} AND r.queue = $1 AND r.limit_key = t.limit_key) AS running,
  ${EFFECTIVE_LIMITS}
FROM top AS t
LEFT JOIN {{schema}}.key_limits AS d ON d.queue = $1 AND d.limit_key = ''
LEFT JOIN {{schema}}.key_limits AS o ON o.queue = $1 AND o.limit_key = t.limit_key AND d.limit_key IS NOT NULL
ORDER BY t.waiting DESC, t.limit_key`;

/**
 * Keys held back right now, for the metrics: every key of a key-limited
 * queue at its concurrency limit or with its rate window full, and its ready
 * jobs (jobs held back by the key's limit). Keys at their concurrency limit
 * are at most the running jobs; keys with a full window, at most the keys
 * that started a job within the longest window. No parameters.
 */
export const keyHeldBackList = `
WITH running AS (
  SELECT r.queue, r.limit_key, count(*)::int AS n FROM {{schema}}.jobs AS r
  WHERE r.status = ${STATE.running} AND r.limit_key IS NOT NULL
    AND r.queue IN (SELECT queue FROM {{schema}}.key_limits WHERE limit_key = '')
  GROUP BY r.queue, r.limit_key
), candidates AS (
  SELECT queue, limit_key FROM running
  UNION
  SELECT s.queue, s.limit_key FROM {{schema}}.key_limit_state AS s WHERE s.window_started_at IS NOT NULL
), held AS (
  SELECT c.queue, c.limit_key FROM candidates AS c
  JOIN {{schema}}.key_limits AS d ON d.queue = c.queue AND d.limit_key = ''
  LEFT JOIN {{schema}}.key_limits AS o ON o.queue = c.queue AND o.limit_key = c.limit_key
  LEFT JOIN running AS ru ON ru.queue = c.queue AND ru.limit_key = c.limit_key
  LEFT JOIN {{schema}}.key_limit_state AS s ON s.queue = c.queue AND s.limit_key = c.limit_key
  WHERE coalesce(ru.n, 0) >= ${effectiveKeyLimit("concurrency_limit")}
     OR (s.window_count >= ${effectiveKeyLimit("rate_limit")}
         AND s.window_started_at + ${effectiveKeyLimit("rate_interval_ms")} * interval '1 millisecond' > now())
)
SELECT h.queue, h.limit_key,
  (SELECT count(*)::int FROM {{schema}}.jobs AS j
   WHERE j.${READY_ROW} AND j.queue = h.queue AND j.limit_key = h.limit_key AND j.run_at <= now()) AS held_jobs
FROM held AS h
ORDER BY h.queue, held_jobs DESC, h.limit_key`;
