// Activity over time for the dashboard's chart. Read-only; none of this
// touches the claim path.

/**
 * Jobs per minute over the last hour, one row per minute (60 rows, oldest
 * first, zero-filled): jobs created, and attempts that ended succeeded or
 * failed (failed, timeout, lease_expired) in that minute. Ended attempts are
 * all in job_executions (a running one lives on its job row), so the table
 * is read, not the view job_attempts.
 *
 * Both tables have UUIDv7 primary keys, whose first 48 bits are the creation
 * time in Unix ms, so `id >= <the window's start as a UUIDv7>` lets the
 * primary-key index find the last hour instead of reading every finished job.
 * Job ids come from the enqueuing process' clock and execution ids are made
 * when an attempt starts, so an attempt that started before the window and
 * ended inside it is not counted: a chart, not an audit.
 * $1 tenant|null (null: all tenants)
 */
export const statsThroughputByMinute = `
WITH window_start AS (
  SELECT date_trunc('minute', now()) - interval '59 minutes' AS since
), lower_id AS (
  SELECT (lpad(to_hex((extract(epoch FROM since) * 1000)::bigint), 12, '0') || '00000000000000000000')::uuid AS id
  FROM window_start
), minutes AS (
  SELECT generate_series(since, since + interval '59 minutes', interval '1 minute') AS minute FROM window_start
), created AS (
  SELECT date_trunc('minute', j.created_at) AS minute, count(*)::int AS enqueued
  FROM {{schema}}.jobs AS j
  WHERE j.id >= (SELECT id FROM lower_id)
    AND j.created_at >= (SELECT since FROM window_start)
    AND ($1::text IS NULL OR j.tenant = $1)
  GROUP BY 1
), ended AS (
  SELECT date_trunc('minute', e.finished_at) AS minute,
         count(*) FILTER (WHERE e.outcome = 'succeeded')::int AS succeeded,
         count(*) FILTER (WHERE e.outcome IN ('failed', 'timeout', 'lease_expired'))::int AS failed
  FROM {{schema}}.job_executions AS e
  WHERE e.id >= (SELECT id FROM lower_id)
    AND e.finished_at >= (SELECT since FROM window_start)
    AND ($1::text IS NULL OR EXISTS (SELECT 1 FROM {{schema}}.jobs AS j WHERE j.id = e.job_id AND j.tenant = $1))
  GROUP BY 1
)
SELECT m.minute,
       coalesce(c.enqueued, 0) AS enqueued,
       coalesce(x.succeeded, 0) AS succeeded,
       coalesce(x.failed, 0) AS failed
FROM minutes AS m
LEFT JOIN created AS c ON c.minute = m.minute
LEFT JOIN ended AS x ON x.minute = m.minute
ORDER BY m.minute`;
