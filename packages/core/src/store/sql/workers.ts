import { STATE } from "./status-sets.js";

/**
 * Register this worker or refresh its row, and forget workers silent for
 * longer than $7 ms (crashed without deregistering). Jobs are not touched
 * here: leases and the reclaim sweep decide about jobs.
 * $1 id, $2 hostname, $3 pid, $4 queues text[]|null, $5 kinds text[], $6 concurrency, $7 stale_ms
 */
export const workerUpsert = `
WITH seen AS (
  INSERT INTO {{schema}}.workers (id, hostname, pid, queues, kinds, concurrency)
  VALUES ($1, $2, $3, $4, $5, $6)
  ON CONFLICT (id) DO UPDATE SET last_seen_at = now()
)
DELETE FROM {{schema}}.workers WHERE last_seen_at < now() - $7::float8 * interval '1 millisecond' AND id <> $1`;

/** $1 id */
export const workerDeregister = `DELETE FROM {{schema}}.workers WHERE id = $1`;

/** Live workers with the jobs each is running. */
export const workerList = `
SELECT w.id, w.hostname, w.pid, w.queues, w.kinds, w.concurrency, w.started_at, w.last_seen_at,
       coalesce(array_agg(j.id ORDER BY j.started_at) FILTER (WHERE j.id IS NOT NULL), '{}') AS running_job_ids
FROM {{schema}}.workers AS w
LEFT JOIN {{schema}}.jobs AS j ON j.status = ${STATE.running} AND j.locked_by = w.id
GROUP BY w.id
ORDER BY w.started_at`;

/**
 * Live workers with the running jobs each holds, limited to one tenant's
 * jobs when $1 is set: a tenant may see that workers exist, never another
 * tenant's job ids.
 * $1 tenant|null (null: all tenants)
 */
export const workerListWithJobs = `
SELECT w.id, w.hostname, w.pid, w.queues, w.kinds, w.concurrency, w.started_at, w.last_seen_at,
       coalesce(array_agg(j.id ORDER BY j.started_at) FILTER (WHERE j.id IS NOT NULL), '{}') AS running_job_ids
FROM {{schema}}.workers AS w
LEFT JOIN {{schema}}.jobs AS j
  ON j.status = ${STATE.running} AND j.locked_by = w.id AND ($1::text IS NULL OR j.tenant = $1)
GROUP BY w.id
ORDER BY w.started_at, w.id`;
