import { historyKinds } from "./history-kinds.js";
import { OUTCOME, STATE } from "./status-sets.js";

// Activity over time for the dashboard and the overview. Read-only; none of this
// touches the claim path.

/**
 * The attempts that ended their jobs successfully in the window, from the
 * history rows that hold them (routines/job-attempts.ts), kind by kind
 * through jobs_finished_by_kind_idx: (finished_at, kind, queue, execution
 * id). Expects CTEs `window_start` and `lower_id`, and `history_kinds`
 * (historyKinds); $1 tenant|null. The OFFSET keeps the lateral a probe per
 * kind: flattened into a join, it can be planned as a scan of today's
 * partition whole.
 */
const HISTORY_SUCCESSES = `
  SELECT h.finished_at, h.kind, h.queue
  FROM history_kinds AS k
  CROSS JOIN LATERAL (
    SELECT h.finished_at, h.kind, h.queue FROM {{schema}}.job_history AS h
    WHERE h.kind = k.kind AND h.finished_at >= (SELECT since FROM window_start)
      AND h.status = ${STATE.succeeded} AND h.current_execution_id >= (SELECT id FROM lower_id)
      AND ($1::text IS NULL OR h.tenant = $1)
    OFFSET 0) AS h
  WHERE k.kind IS NOT NULL`;

/**
 * Jobs per minute over the last hour, one row per minute (60 rows, oldest
 * first, zero-filled): jobs created, and attempts that ended succeeded or
 * failed (failed, timeout, lease_expired) in that minute. An ended attempt
 * is a job_executions row, or, when it ended its job successfully, on the
 * job's history row (HISTORY_SUCCESSES): both are read, not the view
 * job_attempts.
 *
 * Jobs and executions have UUIDv7 ids, whose first 48 bits are the creation
 * time in Unix ms, so `id >= <the window's start as a UUIDv7>` lets the
 * primary-key index find the last hour instead of reading every finished job.
 * Job ids come from the enqueuing process' clock and execution ids are made
 * when an attempt starts, so an attempt that started before the window and
 * ended inside it is not counted: a chart, not an audit. With a queue, jobs
 * are counted by the queue they are in now (a bulk move takes its history
 * along): each failed attempt's job is looked up by primary key, as for a
 * tenant, and the history rows read carry their queue.
 * $1 tenant|null (null: all tenants), $2 queue|null (null: all queues)
 */
export const statsThroughputByMinute = `
WITH RECURSIVE window_start AS (
  SELECT date_trunc('minute', now()) - interval '59 minutes' AS since
), lower_id AS (
  SELECT (lpad(to_hex((extract(epoch FROM since) * 1000)::bigint), 12, '0') || '00000000000000000000')::uuid AS id
  FROM window_start
), ${historyKinds("history_kinds")}, minutes AS (
  SELECT generate_series(since, since + interval '59 minutes', interval '1 minute') AS minute FROM window_start
), created AS (
  SELECT date_trunc('minute', j.created_at) AS minute, count(*)::int AS enqueued
  FROM {{schema}}.jobs AS j
  WHERE j.id >= (SELECT id FROM lower_id)
    AND j.created_at >= (SELECT since FROM window_start)
    AND ($1::text IS NULL OR j.tenant = $1)
    AND ($2::text IS NULL OR j.queue = $2)
  GROUP BY 1
), ended AS (
  SELECT date_trunc('minute', e.finished_at) AS minute,
         count(*) FILTER (WHERE e.outcome = ${OUTCOME.succeeded})::int AS succeeded,
         count(*) FILTER (WHERE e.outcome IN (${OUTCOME.failed}, ${OUTCOME.timeout}, ${OUTCOME.lease_expired}))::int AS failed
  FROM {{schema}}.job_executions AS e
  WHERE e.id >= (SELECT id FROM lower_id)
    AND e.finished_at >= (SELECT since FROM window_start)
    AND (($1::text IS NULL AND $2::text IS NULL) OR EXISTS (
      SELECT 1 FROM {{schema}}.jobs AS j WHERE j.id = e.job_id AND ($1::text IS NULL OR j.tenant = $1) AND ($2::text IS NULL OR j.queue = $2)))
  GROUP BY 1
), history_ended AS (
  SELECT date_trunc('minute', s.finished_at) AS minute, count(*)::int AS succeeded
  FROM (${HISTORY_SUCCESSES}) AS s
  WHERE $2::text IS NULL OR s.queue = $2
  GROUP BY 1
)
SELECT m.minute,
       coalesce(c.enqueued, 0) AS enqueued,
       coalesce(x.succeeded, 0) + coalesce(hx.succeeded, 0) AS succeeded,
       coalesce(x.failed, 0) AS failed
FROM minutes AS m
LEFT JOIN created AS c ON c.minute = m.minute
LEFT JOIN ended AS x ON x.minute = m.minute
LEFT JOIN history_ended AS hx ON hx.minute = m.minute
ORDER BY m.minute`;

/**
 * Attempts that ended in the last $2 ms, per queue, per kind, and the $3
 * most frequent error messages of those that failed (with their kinds and
 * when each was last seen). Rows are (part, name, …): part `queue`, `kind`
 * or `error` (name the message). Succeeded attempts and failed ones (failed,
 * timeout, lease_expired) are counted; other endings (cancelled, retry
 * after, interrupted) are neither.
 *
 * The window is found as in statsThroughputByMinute, by the attempts'
 * UUIDv7 ids, so an attempt that started before it is not counted; the
 * attempts that ended their jobs successfully are read from history as there. Each
 * attempt's job is looked up by primary key: the LIMIT inside the lateral
 * keeps that a per-row index lookup, where a join could be planned as a
 * hash join over the whole jobs table.
 * $1 tenant|null (null: all tenants), $2 window in ms, $3 error messages listed
 */
export const statsRecentActivity = `
WITH RECURSIVE window_start AS (
  SELECT now() - $2::float8 * interval '1 millisecond' AS since
), lower_id AS (
  SELECT (lpad(to_hex((extract(epoch FROM since) * 1000)::bigint), 12, '0') || '00000000000000000000')::uuid AS id
  FROM window_start
), ${historyKinds("history_kinds")}, ended AS MATERIALIZED (
  SELECT j.queue, j.kind, e.outcome = ${OUTCOME.succeeded} AS succeeded, e.finished_at, e.error ->> 'message' AS message
  FROM {{schema}}.job_executions AS e
  CROSS JOIN LATERAL (
    SELECT j.queue, j.kind FROM {{schema}}.jobs AS j
    WHERE j.id = e.job_id AND ($1::text IS NULL OR j.tenant = $1)
    LIMIT 1) AS j
  WHERE e.id >= (SELECT id FROM lower_id)
    AND e.finished_at >= (SELECT since FROM window_start)
    AND e.outcome IN (${OUTCOME.succeeded}, ${OUTCOME.failed}, ${OUTCOME.timeout}, ${OUTCOME.lease_expired})
  UNION ALL
  SELECT s.queue, s.kind, true, s.finished_at, NULL FROM (${HISTORY_SUCCESSES}) AS s
)
SELECT 'queue' AS part, queue AS name,
       (count(*) FILTER (WHERE succeeded))::int AS succeeded, (count(*) FILTER (WHERE NOT succeeded))::int AS failed,
       NULL::text[] AS kinds, NULL::timestamptz AS last_seen_at
FROM ended GROUP BY queue
UNION ALL
SELECT 'kind', kind, (count(*) FILTER (WHERE succeeded))::int, (count(*) FILTER (WHERE NOT succeeded))::int, NULL, NULL
FROM ended GROUP BY kind
UNION ALL
(SELECT 'error', coalesce(message, ''), 0, count(*)::int, array_agg(DISTINCT kind ORDER BY kind), max(finished_at)
 FROM ended WHERE NOT succeeded
 GROUP BY coalesce(message, '')
 ORDER BY count(*) DESC, max(finished_at) DESC
 LIMIT $3)`;
