import { READY } from "./status-sets.js";
// Read-only overviews of queues for the HTTP API, the dashboard and metrics:
// per-queue counts and the oldest ready jobs. None of these touch the claim
// path, and none reads the jobs table through: unfinished and dead jobs are
// counted through their partial indexes up to a limit, everything beyond
// (and succeeded and cancelled jobs, which no partial index holds) comes
// from the planner's estimates (routines/jobs-estimate.ts). The workers
// with what they run are in workers.ts.

/**
 * The queues to report: those with ready, waiting or dead jobs (one index
 * probe per queue: a loose scan of jobs_ready_by_queue_idx, jobs_waiting_idx
 * and jobs_dead_idx), those with running jobs, and those the table's statistics name (queues whose
 * jobs have all finished). With a tenant, also the queues the statistics
 * of (tenant, queue, status) name for it; `tenant_queues` lists those.
 * Uses $1 tenant|null, and `schema` names the parameter of the schema name.
 */
const queueNames = (schema: string) => `
WITH RECURSIVE ready_queues AS (
  (SELECT j.queue FROM {{schema}}.jobs AS j WHERE j.status IN (${READY}) ORDER BY j.queue LIMIT 1)
  UNION ALL
  SELECT (SELECT j.queue FROM {{schema}}.jobs AS j
          WHERE j.status IN (${READY}) AND j.queue > r.queue ORDER BY j.queue LIMIT 1)
  FROM ready_queues AS r WHERE r.queue IS NOT NULL
), waiting_queues AS (
  (SELECT j.queue FROM {{schema}}.jobs AS j WHERE j.status = 'waiting' ORDER BY j.queue LIMIT 1)
  UNION ALL
  SELECT (SELECT j.queue FROM {{schema}}.jobs AS j WHERE j.status = 'waiting' AND j.queue > w.queue ORDER BY j.queue LIMIT 1)
  FROM waiting_queues AS w WHERE w.queue IS NOT NULL
), dead_queues AS (
  (SELECT j.queue FROM {{schema}}.jobs AS j WHERE j.status = 'dead' ORDER BY j.queue LIMIT 1)
  UNION ALL
  SELECT (SELECT j.queue FROM {{schema}}.jobs AS j WHERE j.status = 'dead' AND j.queue > d.queue ORDER BY j.queue LIMIT 1)
  FROM dead_queues AS d WHERE d.queue IS NOT NULL
), tenant_queues AS (
  SELECT DISTINCT s.most_common_vals[i][2] AS queue
  FROM pg_stats_ext AS s CROSS JOIN generate_subscripts(s.most_common_vals, 1) AS i
  WHERE $1::text IS NOT NULL AND s.statistics_schemaname = ${schema} AND s.statistics_name = 'jobs_tenant_queue_status_stats'
    AND s.most_common_vals[i][1] = $1
), queue_names AS (
  SELECT queue FROM ready_queues WHERE queue IS NOT NULL
  UNION SELECT queue FROM waiting_queues WHERE queue IS NOT NULL
  UNION SELECT queue FROM dead_queues WHERE queue IS NOT NULL
  UNION SELECT j.queue FROM {{schema}}.jobs AS j WHERE j.status = 'running'
  UNION SELECT unnest(s.most_common_vals::text::text[]) FROM pg_stats AS s
        WHERE s.schemaname = ${schema} AND s.tablename = 'jobs' AND s.attname = 'queue'
  UNION SELECT unnest(s.histogram_bounds::text::text[]) FROM pg_stats AS s
        WHERE s.schemaname = ${schema} AND s.tablename = 'jobs' AND s.attname = 'queue'
  UNION SELECT queue FROM tenant_queues
)`;

/** The planner's estimates of a queue's succeeded and cancelled jobs ($1 tenant|null; `q` the queue row). */
const FINISHED_ESTIMATES = `
  {{schema}}.jobs_estimate('succeeded', q.queue, $1) AS succeeded_estimate,
  {{schema}}.jobs_estimate('cancelled', q.queue, $1) AS cancelled_estimate`;

/**
 * Per queue: its unfinished and dead jobs counted through their partial
 * indexes, reading at most $2 rows per state (waiting, ready, running,
 * dead), and the planner's estimates where that was not enough and for
 * succeeded and cancelled jobs.
 * `*_read` is how many rows were read; when it reached $2 the count is
 * partial and the estimate stands instead. Ready jobs are read together
 * (queued and retrying share jobs_ready_by_queue_idx). With a tenant, the
 * rows read are the queue's, whoever they belong to, and those of the
 * tenant are counted: the cost stays bounded by $2 however small the
 * tenant is in a shared queue. `in_statistics`: the statistics name the
 * queue for the tenant.
 * $1 tenant|null, $2 rows read at most per queue and state, $3 schema name
 */
export const queueCounts = `${queueNames("$3")}
SELECT q.queue,
       EXISTS (SELECT 1 FROM tenant_queues AS t WHERE t.queue = q.queue) AS in_statistics,
       w.waiting_read, w.waiting, r.ready_read, r.queued, r.retrying, n.running_read, n.running, d.dead_read, d.dead,
       CASE WHEN w.waiting_read >= $2 THEN {{schema}}.jobs_estimate('waiting', q.queue, $1) END AS waiting_estimate,
       CASE WHEN r.ready_read >= $2 THEN {{schema}}.jobs_estimate('queued', q.queue, $1) END AS queued_estimate,
       CASE WHEN r.ready_read >= $2 THEN {{schema}}.jobs_estimate('retrying', q.queue, $1) END AS retrying_estimate,
       CASE WHEN n.running_read >= $2 THEN {{schema}}.jobs_estimate('running', q.queue, $1) END AS running_estimate,
       CASE WHEN d.dead_read >= $2 THEN {{schema}}.jobs_estimate('dead', q.queue, $1) END AS dead_estimate,
       ${FINISHED_ESTIMATES}
FROM queue_names AS q
CROSS JOIN LATERAL (
  SELECT count(*)::int AS waiting_read, (count(*) FILTER (WHERE $1::text IS NULL OR x.tenant = $1))::int AS waiting
  FROM (SELECT j.tenant FROM {{schema}}.jobs AS j WHERE j.status = 'waiting' AND j.queue = q.queue LIMIT $2) AS x
) AS w
CROSS JOIN LATERAL (
  SELECT count(*)::int AS ready_read,
         (count(*) FILTER (WHERE x.status = 'queued' AND ($1::text IS NULL OR x.tenant = $1)))::int AS queued,
         (count(*) FILTER (WHERE x.status = 'retrying' AND ($1::text IS NULL OR x.tenant = $1)))::int AS retrying
  FROM (SELECT j.tenant, j.status FROM {{schema}}.jobs AS j
        WHERE j.status IN (${READY}) AND j.queue = q.queue LIMIT $2) AS x
) AS r
CROSS JOIN LATERAL (
  SELECT count(*)::int AS running_read, (count(*) FILTER (WHERE $1::text IS NULL OR x.tenant = $1))::int AS running
  FROM (SELECT j.tenant FROM {{schema}}.jobs AS j WHERE j.status = 'running' AND j.queue = q.queue LIMIT $2) AS x
) AS n
CROSS JOIN LATERAL (
  SELECT count(*)::int AS dead_read, (count(*) FILTER (WHERE $1::text IS NULL OR x.tenant = $1))::int AS dead
  FROM (SELECT j.tenant FROM {{schema}}.jobs AS j WHERE j.status = 'dead' AND j.queue = q.queue LIMIT $2) AS x
) AS d
ORDER BY q.queue`;

/**
 * Per queue, every state counted exactly, but only when the whole jobs
 * table holds at most $2 rows (a new or small installation, where
 * statistics are missing or rough): then reading it is cheaper than a
 * query of each state. Otherwise one row, `small` false, and nothing else
 * is read: the size is counted through the primary key up to $2 + 1 rows,
 * and the grouped read below runs only behind that one-time test.
 * $1 tenant|null, $2 rows the table may hold at most
 */
export const queueCountsSmall = `
WITH size AS MATERIALIZED (
  SELECT count(*) <= $2 AS small FROM (SELECT j.id FROM {{schema}}.jobs AS j ORDER BY j.id LIMIT $2 + 1) AS x
)
SELECT s.small, c.*
FROM size AS s
LEFT JOIN (
  SELECT j.queue,
         (count(*) FILTER (WHERE j.status = 'waiting'))::int AS waiting,
         (count(*) FILTER (WHERE j.status = 'queued'))::int AS queued,
         (count(*) FILTER (WHERE j.status = 'running'))::int AS running,
         (count(*) FILTER (WHERE j.status = 'retrying'))::int AS retrying,
         (count(*) FILTER (WHERE j.status = 'succeeded'))::int AS succeeded,
         (count(*) FILTER (WHERE j.status = 'cancelled'))::int AS cancelled,
         (count(*) FILTER (WHERE j.status = 'dead'))::int AS dead
  FROM {{schema}}.jobs AS j
  WHERE (SELECT small FROM size) AND ($1::text IS NULL OR j.tenant = $1)
  GROUP BY j.queue
) AS c ON true
ORDER BY c.queue`;

/**
 * The same queues with every state estimated and nothing counted: what
 * queueCounts falls back to when it did not finish within the time bound.
 * With a tenant, only the queues the statistics name for it.
 * $1 tenant|null, $2 schema name
 */
export const queueEstimates = `${queueNames("$2")}
SELECT q.queue,
       {{schema}}.jobs_estimate('waiting', q.queue, $1) AS waiting_estimate,
       {{schema}}.jobs_estimate('queued', q.queue, $1) AS queued_estimate,
       {{schema}}.jobs_estimate('retrying', q.queue, $1) AS retrying_estimate,
       {{schema}}.jobs_estimate('running', q.queue, $1) AS running_estimate,
       {{schema}}.jobs_estimate('dead', q.queue, $1) AS dead_estimate,
       ${FINISHED_ESTIMATES}
FROM queue_names AS q
WHERE $1::text IS NULL OR q.queue IN (SELECT queue FROM tenant_queues)
ORDER BY q.queue`;

/**
 * The first ready job of each queue and priority, in run-time order: the
 * oldest ready job of every queue is among them. A loose scan of
 * jobs_ready_by_queue_idx visits each (queue, priority) once. With a
 * tenant, each group's first $2 jobs are read for the tenant's first, so
 * a tenant whose jobs sit behind $2 others of its priority shows the
 * oldest of those it has among them (or none), at a bounded cost.
 * Only jobs whose run time has come are returned.
 * $1 tenant|null, $2 rows of one queue and priority read at most
 */
export const queueReadyHeads = `
WITH RECURSIVE heads AS (
  (SELECT j.queue, j.priority FROM {{schema}}.jobs AS j
   WHERE j.status IN (${READY}) ORDER BY j.queue, j.priority LIMIT 1)
  UNION ALL
  SELECT n.queue, n.priority FROM heads AS g CROSS JOIN LATERAL (
    SELECT j.queue, j.priority FROM {{schema}}.jobs AS j
    WHERE j.status IN (${READY}) AND (j.queue, j.priority) > (g.queue, g.priority)
    ORDER BY j.queue, j.priority LIMIT 1) AS n
)
SELECT g.queue, h.id, h.kind, h.tenant, (extract(epoch FROM now() - h.run_at) * 1000)::float8 AS age_ms
FROM heads AS g CROSS JOIN LATERAL (
  SELECT x.id, x.kind, x.tenant, x.run_at FROM (
    SELECT j.id, j.kind, j.tenant, j.run_at FROM {{schema}}.jobs AS j
    WHERE j.status IN (${READY}) AND j.queue = g.queue AND j.priority = g.priority
    ORDER BY j.run_at, j.id LIMIT $2) AS x
  WHERE $1::text IS NULL OR x.tenant = $1
  ORDER BY x.run_at, x.id LIMIT 1) AS h
WHERE h.run_at <= now()`;

/**
 * Running jobs whose lease ran out (their worker stopped renewing it), the
 * longest expired first, through jobs_running_lease_idx: how many (up to
 * $2) and the first $3. One row even when there are none (its job columns
 * null).
 * $1 tenant|null, $2 jobs counted at most, $3 jobs listed
 */
export const jobLeaseExpiredList = `
WITH expired AS MATERIALIZED (
  SELECT j.id, j.queue, j.kind, j.tenant, j.locked_by, j.lease_expires_at
  FROM {{schema}}.jobs AS j
  WHERE j.status = 'running' AND j.lease_expires_at < now() AND ($1::text IS NULL OR j.tenant = $1)
  ORDER BY j.lease_expires_at
  LIMIT $2
)
SELECT c.count, e.id, e.queue, e.kind, e.tenant, e.locked_by,
       (extract(epoch FROM now() - e.lease_expires_at) * 1000)::float8 AS expired_ms
FROM (SELECT count(*)::int AS count FROM expired) AS c
LEFT JOIN LATERAL (SELECT * FROM expired ORDER BY lease_expires_at LIMIT $3) AS e ON true`;
