import { JOB_STATUSES } from "../../core/states.js";
import { READY } from "./status-sets.js";
// Read-only overviews of queues for the HTTP API, the dashboard and metrics:
// per-queue counts and the oldest ready jobs. None of these touch the claim
// path, and none reads the jobs table through: every state of a queue is
// counted through jobs_by_queue_status_tenant_idx up to a limit, and only
// a state with more rows than that is the planner's estimate
// (routines/jobs-estimate.ts). The workers with what they run are in
// workers.ts.

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

/** Every job state, as the rows `s(status)` of a queue's counts. */
const STATES = `unnest(ARRAY[${JOB_STATUSES.map((status) => `'${status}'`).join(", ")}]::text[]) AS s(status)`;

/**
 * Per queue and state: its jobs counted through
 * jobs_by_queue_status_tenant_idx, reading at most $2 index entries
 * (`counted`), and the planner's estimate only when $2 were read (the
 * count is then a lower bound). For a tenant, its own entries are read
 * (the index's third column), so the cost stays bounded by $2 however
 * small the tenant is in a shared queue, and a state where it has no jobs
 * is counted 0. `in_statistics`: the statistics name the queue for the
 * tenant.
 * $1 tenant|null, $2 rows read at most per queue and state, $3 schema name
 */
export const queueCounts = `${queueNames("$3")}
SELECT q.queue, s.status,
       EXISTS (SELECT 1 FROM tenant_queues AS t WHERE t.queue = q.queue) AS in_statistics,
       c.counted,
       CASE WHEN c.counted >= $2 THEN {{schema}}.jobs_estimate(s.status, q.queue, $1) END AS estimate
FROM queue_names AS q
CROSS JOIN ${STATES}
CROSS JOIN LATERAL (
  SELECT CASE WHEN $1::text IS NULL
    THEN (SELECT count(*)::int FROM (SELECT 1 FROM {{schema}}.jobs AS j
          WHERE j.queue = q.queue AND j.status = s.status LIMIT $2) AS x)
    ELSE (SELECT count(*)::int FROM (SELECT 1 FROM {{schema}}.jobs AS j
          WHERE j.queue = q.queue AND j.status = s.status AND j.tenant = $1 LIMIT $2) AS x)
  END AS counted
) AS c
ORDER BY q.queue, s.status`;

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
 * The same queues with every state estimated, nothing counted: what
 * queueCounts falls back to when it did not finish within the time bound.
 * A state with no jobs (one probe of jobs_by_queue_status_tenant_idx) is
 * 0, never the planner's floor of 1. With a tenant, only the queues the
 * statistics name for it.
 * $1 tenant|null, $2 schema name
 */
export const queueEstimates = `${queueNames("$2")}
SELECT q.queue, s.status,
       CASE WHEN CASE WHEN $1::text IS NULL
                      THEN EXISTS (SELECT 1 FROM {{schema}}.jobs AS j WHERE j.queue = q.queue AND j.status = s.status)
                      ELSE EXISTS (SELECT 1 FROM {{schema}}.jobs AS j WHERE j.queue = q.queue AND j.status = s.status AND j.tenant = $1)
                 END
            THEN {{schema}}.jobs_estimate(s.status, q.queue, $1) ELSE 0 END AS estimate
FROM queue_names AS q
CROSS JOIN ${STATES}
WHERE $1::text IS NULL OR q.queue IN (SELECT queue FROM tenant_queues)
ORDER BY q.queue, s.status`;

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
