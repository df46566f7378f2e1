import { JOB_STATUSES, type JobStatus, READY_STATUSES } from "../../core/states.js";
import { READY, STATE } from "./status-sets.js";
// Read-only overviews of queues for the HTTP API, the dashboard and metrics:
// per-queue counts and the oldest ready jobs. None of these touch the claim
// path, and none reads the jobs table through: every state of a queue is
// counted up to a limit (through jobs_by_queue_state_tenant_idx,
// jobs_running_lease_idx for running jobs, whose entries the fleet's
// concurrency bounds, and jobs_ready_by_queue_idx for ready jobs), and only a state with more rows
// than that is the planner's estimate (routines/jobs-estimate.ts). The
// workers with what they run are in workers.ts.

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
  (SELECT j.queue FROM {{schema}}.jobs AS j WHERE j.status = ${STATE.waiting} ORDER BY j.queue LIMIT 1)
  UNION ALL
  SELECT (SELECT j.queue FROM {{schema}}.jobs AS j WHERE j.status = ${STATE.waiting} AND j.queue > w.queue ORDER BY j.queue LIMIT 1)
  FROM waiting_queues AS w WHERE w.queue IS NOT NULL
), dead_queues AS (
  (SELECT j.queue FROM {{schema}}.jobs AS j WHERE j.status = ${STATE.dead} ORDER BY j.queue LIMIT 1)
  UNION ALL
  SELECT (SELECT j.queue FROM {{schema}}.jobs AS j WHERE j.status = ${STATE.dead} AND j.queue > d.queue ORDER BY j.queue LIMIT 1)
  FROM dead_queues AS d WHERE d.queue IS NOT NULL
), tenant_queues AS (
  SELECT DISTINCT s.most_common_vals[i][2] AS queue
  FROM pg_stats_ext AS s CROSS JOIN generate_subscripts(s.most_common_vals, 1) AS i
  WHERE $1::text IS NOT NULL AND s.statistics_schemaname = ${schema} AND s.statistics_name ~ '_tenant_queue_status_stats$'
    AND s.most_common_vals[i][1] = $1
), queue_names AS (
  SELECT queue FROM ready_queues WHERE queue IS NOT NULL
  UNION SELECT queue FROM waiting_queues WHERE queue IS NOT NULL
  UNION SELECT queue FROM dead_queues WHERE queue IS NOT NULL
  UNION SELECT j.queue FROM {{schema}}.jobs AS j WHERE j.status = ${STATE.running}
  UNION SELECT unnest(s.most_common_vals::text::text[]) FROM pg_stats AS s
        WHERE s.schemaname = ${schema} AND (s.tablename IN ('jobs', 'jobs_live', 'jobs_dead') OR s.tablename ~ '^job_history_') AND s.attname = 'queue'
  UNION SELECT unnest(s.histogram_bounds::text::text[]) FROM pg_stats AS s
        WHERE s.schemaname = ${schema} AND (s.tablename IN ('jobs', 'jobs_live', 'jobs_dead') OR s.tablename ~ '^job_history_') AND s.attname = 'queue'
  UNION SELECT queue FROM tenant_queues
)`;

/**
 * At most `limit` ready jobs of queue `q.queue`, read through
 * jobs_ready_by_queue_idx: how many were read (`ready_read`), and how many
 * of them (of tenant $1 when not null) are in each ready state.
 */
const readyRead = (limit: string) => `
  SELECT count(*)::int AS ready_read,
         ${READY_STATUSES.map((status) => `(count(*) FILTER (WHERE x.status = '${status}' AND ($1::text IS NULL OR x.tenant = $1)))::int AS ${status}`).join(",\n         ")}
  FROM (SELECT j.tenant, j.status FROM {{schema}}.jobs AS j
        WHERE j.status IN (${READY}) AND j.queue = q.queue LIMIT ${limit}) AS x
`;

/** The states counted one by one, each through an index of its own state (running: jobs_running_lease_idx): every state but the ready ones. */
const INDEXED_STATES = JOB_STATUSES.filter((status) => !READY_STATUSES.includes(status));

/**
 * The jobs of queue `q.queue` in `status` (for tenant $1, or all when
 * null), counted up to $2, through an index whose predicate the literal
 * status implies. `extra`: a further condition on `j`.
 */
const countUpTo = (status: JobStatus, extra = "") => `CASE WHEN $1::text IS NULL
    THEN (SELECT count(*)::int FROM (SELECT 1 FROM {{schema}}.jobs AS j
          WHERE j.queue = q.queue AND j.status = '${status}'${extra} LIMIT $2) AS x)
    ELSE (SELECT count(*)::int FROM (SELECT 1 FROM {{schema}}.jobs AS j
          WHERE j.queue = q.queue AND j.status = '${status}' AND j.tenant = $1${extra} LIMIT $2) AS x)
  END`;

/**
 * Per queue: its jobs in each state, counted up to $2 (`<state>`), and the
 * planner's estimate only where $2 were counted (`<state>_estimate`: the
 * count is then a lower bound). Waiting, sleeping, succeeded, cancelled and
 * dead jobs are counted through the (queue, status, tenant) indexes of
 * their tables, running ones through jobs_running_lease_idx; for a
 * tenant, its own entries, so the cost stays bounded by $2 however small
 * the tenant is in a shared queue, and a state where it has no jobs is 0.
 * Ready jobs are read together, at most $2 of the queue through
 * jobs_ready_by_queue_idx (the claim's index); when that read was not all
 * of them and a ready state (or the tenant) was not seen $2 times in it,
 * that state is counted again on its own up to $2, so that it too is
 * exact up to the limit (that recount reads the queue's ready jobs until
 * it has counted $2 or read them all: it runs only for a queue with more
 * than $2 ready jobs where a state, or the tenant, is rare among them). `in_statistics`: the statistics name the queue
 * for the tenant.
 * $1 tenant|null, $2 rows counted at most per queue and state, $3 schema name
 */
export const queueCounts = `${queueNames("$3")}
SELECT q.queue,
       EXISTS (SELECT 1 FROM tenant_queues AS t WHERE t.queue = q.queue) AS in_statistics,
       ${JOB_STATUSES.map((status) => `c.${status}`).join(", ")},
       ${JOB_STATUSES.map((status) => `CASE WHEN c.${status} >= $2 THEN {{schema}}.jobs_estimate('${status}', q.queue, $1) END AS ${status}_estimate`).join(",\n       ")}
FROM queue_names AS q
CROSS JOIN LATERAL (${readyRead("$2")}) AS r
CROSS JOIN LATERAL (
  SELECT ${INDEXED_STATES.map((status) => `${countUpTo(status)} AS ${status}`).join(",\n         ")},
         ${READY_STATUSES.map((status) => `CASE WHEN r.ready_read < $2 OR r.${status} >= $2 THEN r.${status} ELSE ${countUpTo(status, ` AND j.status IN (${READY})`)} END AS ${status}`).join(",\n         ")}
) AS c
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
         ${JOB_STATUSES.map((status) => `(count(*) FILTER (WHERE j.status = '${status}'))::int AS ${status}`).join(",\n         ")}
  FROM {{schema}}.jobs AS j
  WHERE (SELECT small FROM size) AND ($1::text IS NULL OR j.tenant = $1)
  GROUP BY j.queue
) AS c ON true
ORDER BY c.queue`;

/** Whether queue `q.queue` has jobs in `status` (of tenant $1 when not null): one index probe. */
const hasJobs = (status: JobStatus) => `CASE WHEN $1::text IS NULL
    THEN (SELECT true FROM {{schema}}.jobs AS j WHERE j.queue = q.queue AND j.status = '${status}' LIMIT 1) IS NOT NULL
    ELSE (SELECT true FROM {{schema}}.jobs AS j WHERE j.queue = q.queue AND j.status = '${status}' AND j.tenant = $1 LIMIT 1) IS NOT NULL
  END`;

/**
 * Whether the table's statistics name `status` in queue `q.queue` (for
 * tenant $1 when not null) among their most common combinations, that is,
 * whether ANALYZE's sample held such jobs. `schema` names the parameter of
 * the schema name.
 */
const inStatistics = (status: JobStatus, schema: string) => `EXISTS (
    SELECT 1 FROM pg_stats_ext AS s CROSS JOIN generate_subscripts(s.most_common_vals, 1) AS i
    WHERE s.statistics_schemaname = ${schema} AND CASE WHEN $1::text IS NULL
      THEN s.statistics_name ~ '_queue_status_stats$' AND s.statistics_name !~ '_tenant_queue_status_stats$' AND s.most_common_vals[i][1] = q.queue AND s.most_common_vals[i][2] = '${status}'
      ELSE s.statistics_name ~ '_tenant_queue_status_stats$' AND s.most_common_vals[i][1] = $1
           AND s.most_common_vals[i][2] = q.queue AND s.most_common_vals[i][3] = '${status}'
    END)`;

/**
 * The same queues with every state estimated, counting next to nothing:
 * what queueCounts falls back to when it did not finish within the time
 * bound. A state with no jobs is 0, never the planner's floor of 1: one
 * index probe per state but the ready ones.
 * Those are read together, at most $3 of the queue's ready jobs through
 * jobs_ready_by_queue_idx: when that was all of them, each ready state's
 * count is exact (`ready_exact`); otherwise a ready state seen in it is
 * the planner's estimate, never below what was seen, and one not seen is
 * the planner's estimate only when the statistics name it for the queue
 * (and tenant), else 0: it holds too few jobs to be known. With a tenant,
 * only the queues the statistics name for it.
 * $1 tenant|null, $2 schema name, $3 ready jobs of one queue read at most
 */
export const queueEstimates = `${queueNames("$2")}
SELECT q.queue, r.ready_read < $3 AS ready_exact,
       ${INDEXED_STATES.map((status) => `CASE WHEN ${hasJobs(status)} THEN {{schema}}.jobs_estimate('${status}', q.queue, $1) ELSE 0 END AS ${status}_estimate`).join(",\n       ")},
       ${READY_STATUSES.map(
         (status) => `CASE WHEN r.ready_read < $3 THEN r.${status}
         WHEN r.${status} > 0 OR ${inStatistics(status, "$2")} THEN GREATEST(r.${status}, {{schema}}.jobs_estimate('${status}', q.queue, $1))
         ELSE 0 END AS ${status}_estimate`,
       ).join(",\n       ")}
FROM queue_names AS q
CROSS JOIN LATERAL (${readyRead("$3")}) AS r
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
  WHERE j.status = ${STATE.running} AND j.lease_expires_at < now() AND ($1::text IS NULL OR j.tenant = $1)
  ORDER BY j.lease_expires_at
  LIMIT $2
)
SELECT c.count, e.id, e.queue, e.kind, e.tenant, e.locked_by,
       (extract(epoch FROM now() - e.lease_expires_at) * 1000)::float8 AS expired_ms
FROM (SELECT count(*)::int AS count FROM expired) AS c
LEFT JOIN LATERAL (SELECT * FROM expired ORDER BY lease_expires_at LIMIT $3) AS e ON true`;
