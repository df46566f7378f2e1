// Read-only overviews of queues for the HTTP API and its metrics: per-queue
// counts and depth. None of these touch the claim path. The workers with what
// they run are in workers.ts.

/**
 * Per queue: jobs by status and the age of the oldest job that is ready now
 * (queued or retrying with run_at passed; null when none is waiting). A full
 * count over the tenant's jobs: meant for dashboards and operators, not for
 * per-request use.
 * $1 tenant|null (null: all tenants)
 */
export const queueStats = `
SELECT queue,
       count(*) FILTER (WHERE status = 'waiting')::int   AS waiting,
       count(*) FILTER (WHERE status = 'queued')::int    AS queued,
       count(*) FILTER (WHERE status = 'running')::int   AS running,
       count(*) FILTER (WHERE status = 'retrying')::int  AS retrying,
       count(*) FILTER (WHERE status = 'succeeded')::int AS succeeded,
       count(*) FILTER (WHERE status = 'cancelled')::int AS cancelled,
       count(*) FILTER (WHERE status = 'dead')::int      AS dead,
       (extract(epoch FROM now() - min(run_at) FILTER (WHERE status IN ('queued', 'retrying') AND run_at <= now())) * 1000)::float8
         AS oldest_ready_age_ms
FROM {{schema}}.jobs
WHERE ($1::text IS NULL OR tenant = $1)
GROUP BY queue
ORDER BY queue`;

/**
 * Queue depth for the metrics gauge: unfinished jobs by queue and status
 * (`waiting`: on their dependencies),
 * plus dead-lettered ones. Succeeded and cancelled jobs are left out: they
 * only grow, and counting them on every scrape would read the whole table.
 * No parameters.
 */
export const queueDepth = `
SELECT queue, status, count(*)::int AS count
FROM {{schema}}.jobs
WHERE status IN ('waiting', 'queued', 'running', 'retrying')
GROUP BY queue, status
UNION ALL
SELECT queue, 'dead' AS status, count(*)::int AS count
FROM {{schema}}.dead_letter_jobs
GROUP BY queue`;
