import { claimKeys } from "./key-fragments.js";
import { CANCELLABLE, ENDED_UNSUCCESSFULLY, STATE, TERMINAL } from "./status-sets.js";
import { cancelJobs } from "./job-action-fragments.js";
import { JOB_COLUMNS, jobColumnsOf } from "./job-columns.js";

// Dependencies, flows and batches (the routines job_dependents_* and job_ends_release). What releases a dependent
// is not here: every statement that ends a job with dependents records it
// (sql/job-moves.ts, routines/jobs-ended.ts), and the release runs at its
// commit, so no caller can forget it.

export const FLOW_COLUMNS = "id, tenant, kind, name, idempotency_key, request_hash, callback_job_id, created_at";

/**
 * Lock the existing jobs a new job will depend on, in id order, mark them
 * as having dependents, and return their state under the lock: a dependency
 * that ends after this statement finds the new edges (its trigger runs after
 * our commit, or waits for it), and one that ended before is seen ended here.
 * $1 job ids uuid[]
 */
export const dependencyTargetsLock = `
UPDATE {{schema}}.jobs AS j SET has_dependents = true
FROM (SELECT id FROM {{schema}}.jobs WHERE id = ANY($1::uuid[]) ORDER BY id FOR UPDATE) AS locked
WHERE j.id = locked.id
RETURNING j.id, j.tenant, j.kind, j.status`;

/**
 * A flow's row; nothing when its idempotency key is taken.
 * $1 id, $2 tenant, $3 kind, $4 name|null, $5 idempotency key|null, $6 request hash, $7 callback job id|null
 */
export const flowInsert = `
INSERT INTO {{schema}}.flows (id, tenant, kind, name, idempotency_key, request_hash, callback_job_id)
VALUES ($1, $2, $3, $4, $5, $6, $7)
ON CONFLICT (tenant, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING
RETURNING id`;

/** $1 tenant, $2 idempotency key */
export const flowGetByKey = `
SELECT ${FLOW_COLUMNS} FROM {{schema}}.flows WHERE tenant = $1 AND idempotency_key = $2`;

/** $1 flow id, $2 tenant|null */
export const flowGet = `
SELECT ${FLOW_COLUMNS} FROM {{schema}}.flows WHERE id = $1 AND ($2::text IS NULL OR tenant = $2)`;

/**
 * $1 tenant|null, $2 kind|null, $3 cursor id|null (exclusive), $4 limit — newest first, each with its
 * jobs counted by status (\`counts\`: { status: n }, only the statuses it has; read through flow_jobs' (flow_id, node) index)
 */
export const flowList = `
SELECT ${FLOW_COLUMNS},
       (SELECT coalesce(jsonb_object_agg(s.status, s.n), '{}')
        FROM (SELECT j.status, count(*)::int AS n
              FROM {{schema}}.flow_jobs AS m JOIN {{schema}}.jobs AS j ON j.id = m.job_id
              WHERE m.flow_id = f.id GROUP BY j.status) AS s) AS counts
FROM {{schema}}.flows AS f
WHERE ($1::text IS NULL OR tenant = $1) AND ($2::text IS NULL OR kind = $2) AND ($3::uuid IS NULL OR id < $3)
ORDER BY id DESC
LIMIT $4`;

/**
 * The jobs of a graph, their names in the flow, their edges and their
 * dependency counts, in one statement. Jobs with dependencies go in
 * `waiting`; `settle` marks each whose counts let it move at once (every dependency
 * ended, or one that blocks it did), for jobDependentsCheck.
 * $1 ids uuid[], $2 tenant, $3 queues text[], $4 kinds text[], $5 payloads (json text)[], $6 priorities smallint[],
 * $7 max attempts integer[], $8 run_at timestamptz[], $9 delay ms float8[], $10 idempotency keys text[],
 * $11 statuses text[], $12 has dependents boolean[],
 * $13 flow id|null, $14 node names text[],
 * $15 edge dependencies uuid[], $16 edge dependents uuid[], $17 edge policies text[],
 * $18 ids of the jobs with dependencies uuid[], $19 their run_if text[], $20 trace contexts (json text)[], $21 limit keys text[]
 * Rows whose idempotency key is taken are skipped (not returned), with nothing else of theirs written.
 */
export const flowJobsInsert = `
WITH ${claimKeys("SELECT $2::text, k, id FROM unnest($10::text[], $1::uuid[]) AS k(k, id)")}, inserted AS (
  INSERT INTO {{schema}}.jobs_live (id, tenant, queue, kind, payload, priority, max_attempts, run_at, idempotency_key, status, has_dependents,
                              trace_context, limit_key)
  SELECT id, $2::text, queue, kind, payload::jsonb, priority, max_attempts,
         coalesce(run_at, now() + coalesce(delay_ms, 0) * interval '1 millisecond'), idempotency_key, status, has_dependents,
         trace_context::jsonb, limit_key
  FROM unnest($1::uuid[], $3::text[], $4::text[], $5::text[], $6::smallint[], $7::integer[], $8::timestamptz[],
              $9::float8[], $10::text[], $11::text[], $12::boolean[], $20::text[], $21::text[])
    AS input(id, queue, kind, payload, priority, max_attempts, run_at, delay_ms, idempotency_key, status, has_dependents, trace_context,
             limit_key)
  WHERE input.idempotency_key IS NULL OR input.id IN (SELECT job_id FROM claimed)
  RETURNING id, floor(extract(epoch FROM run_at) * 1000)::float8 AS run_at_ms,
            floor(extract(epoch FROM created_at) * 1000)::float8 AS created_at_ms
), members AS (
  INSERT INTO {{schema}}.flow_jobs (job_id, flow_id, node)
  SELECT input.id, $13::uuid, input.node FROM unnest($1::uuid[], $14::text[]) AS input(id, node)
  WHERE $13::uuid IS NOT NULL
), edges AS (
  INSERT INTO {{schema}}.job_dependencies (depends_on, job_id, on_failure)
  SELECT e.depends_on, e.job_id, e.on_failure
  FROM unnest($15::uuid[], $16::uuid[], $17::text[]) AS e(depends_on, job_id, on_failure)
  WHERE e.job_id IN (SELECT id FROM inserted)
), states AS (
  -- Each new job's counts, from its edges and what its dependencies are now
  -- (the caller holds their rows locked): a dependency of the same call is
  -- new, so it has not ended. The one place counts start; the routines
  -- job_dependents_release and job_dependents_settle change them.
  INSERT INTO {{schema}}.job_dependency_state (job_id, pending, failed, blocking, blocker, run_if)
  SELECT s.job_id,
         count(*) FILTER (WHERE p.status IS NULL OR p.status NOT IN (${TERMINAL})),
         count(*) FILTER (WHERE p.status IN (${ENDED_UNSUCCESSFULLY})),
         count(*) FILTER (WHERE p.status IN (${ENDED_UNSUCCESSFULLY}) AND e.on_failure <> 'run'),
         (array_agg(e.depends_on ORDER BY e.depends_on) FILTER (WHERE p.status IN (${ENDED_UNSUCCESSFULLY}) AND e.on_failure <> 'run'))[1],
         s.run_if
  FROM unnest($18::uuid[], $19::text[]) AS s(job_id, run_if)
  JOIN unnest($15::uuid[], $16::uuid[], $17::text[]) AS e(depends_on, job_id, on_failure) ON e.job_id = s.job_id
  LEFT JOIN {{schema}}.jobs AS p ON p.id = e.depends_on AND p.id = ANY($15::uuid[])
  WHERE s.job_id IN (SELECT id FROM inserted)
  GROUP BY s.job_id, s.run_if
  RETURNING job_id, pending = 0 OR blocking > 0 AS settle
)
SELECT i.id, i.run_at_ms, i.created_at_ms, coalesce(s.settle, false) AS settle
FROM inserted AS i LEFT JOIN states AS s ON s.job_id = i.id`;

/**
 * Settle new dependents whose dependencies had all ended already (or one
 * that blocks them had), and release what waits on them in turn. $1 job ids uuid[]
 */
export const jobDependentsCheck = `
SELECT {{schema}}.job_dependents_check($1::uuid[])`;

/** $1 job ids uuid[] */
export const jobGetMany = `
SELECT ${JOB_COLUMNS} FROM {{schema}}.jobs WHERE id = ANY($1::uuid[])`;

/**
 * A flow's jobs with their names, in id order, and each one's dependencies as
 * job ids. $1 flow id
 */
export const flowJobList = `
SELECT ${jobColumnsOf("j")}, m.node,
       coalesce((SELECT array_agg(d.depends_on ORDER BY d.depends_on) FROM {{schema}}.job_dependencies AS d
                 WHERE d.job_id = j.id), '{}') AS depends_on
FROM {{schema}}.flow_jobs AS m
JOIN {{schema}}.jobs AS j ON j.id = m.job_id
WHERE m.flow_id = $1
ORDER BY j.id`;

/**
 * What a job depends on and what depends on it, with each one's state and
 * its name in a flow. $1 job id
 */
export const jobDependencyLinks = `
SELECT 'dependency' AS direction, d.on_failure, j.id, j.kind, j.status, m.node
FROM {{schema}}.job_dependencies AS d
JOIN {{schema}}.jobs AS j ON j.id = d.depends_on
LEFT JOIN {{schema}}.flow_jobs AS m ON m.job_id = j.id
WHERE d.job_id = $1
UNION ALL
SELECT 'dependent', d.on_failure, j.id, j.kind, j.status, m.node
FROM {{schema}}.job_dependencies AS d
JOIN {{schema}}.jobs AS j ON j.id = d.job_id
LEFT JOIN {{schema}}.flow_jobs AS m ON m.job_id = j.id
WHERE d.depends_on = $1
ORDER BY 1, 3`;

/** A job's flow id and name in it, and its dependency counts. $1 job id */
export const jobFlowState = `
SELECT m.flow_id, m.node, s.pending, s.failed, s.blocking, s.blocker, s.run_if
FROM (SELECT $1::uuid AS id) AS job
LEFT JOIN {{schema}}.flow_jobs AS m ON m.job_id = job.id
LEFT JOIN {{schema}}.job_dependency_state AS s ON s.job_id = job.id`;

/**
 * The dependencies of a running job with their outcomes and results, for its
 * handler. $1 job id
 */
export const jobDependencyOutcomes = `
SELECT j.id, j.kind, j.status, j.result, j.last_error, m.node
FROM {{schema}}.job_dependencies AS d
JOIN {{schema}}.jobs AS j ON j.id = d.depends_on
LEFT JOIN {{schema}}.flow_jobs AS m ON m.job_id = j.id
WHERE d.job_id = $1
ORDER BY j.id`;

/** Counts of a job's dependencies by state, and the ids of those that did not succeed. $1 job id */
export const jobDependencySummary = `
SELECT count(*)::integer AS total,
       (count(*) FILTER (WHERE j.status = ${STATE.succeeded}))::integer AS succeeded,
       (count(*) FILTER (WHERE j.status = ${STATE.dead}))::integer AS dead,
       (count(*) FILTER (WHERE j.status = ${STATE.cancelled}))::integer AS cancelled,
       (count(*) FILTER (WHERE j.status NOT IN (${TERMINAL})))::integer AS unfinished,
       coalesce(array_agg(j.id ORDER BY j.id) FILTER (WHERE j.status IN (${STATE.dead}, ${STATE.cancelled})), '{}') AS failed_ids
FROM {{schema}}.job_dependencies AS d
JOIN {{schema}}.jobs AS j ON j.id = d.depends_on
WHERE d.job_id = $1`;

/**
 * Cancel a flow: its jobs that have not started are cancelled at once, and
 * running ones get the flag (their workers are notified at commit), as
 * jobCancel does for one job. Rows are locked in id order. The cancelled
 * ones release what waits on them (at commit), inside the flow or not.
 * $1 flow id, $2 tenant|null
 */
export const flowCancel = `
WITH flow AS (
  SELECT id FROM {{schema}}.flows WHERE id = $1 AND ($2::text IS NULL OR tenant = $2)
), target AS (
  SELECT j.id, j.status FROM {{schema}}.jobs_live AS j
  WHERE j.id = ANY(ARRAY(SELECT m.job_id FROM {{schema}}.flow_jobs AS m JOIN flow ON m.flow_id = flow.id))
    AND j.status IN (${CANCELLABLE})
  ORDER BY j.id
  FOR UPDATE OF j
)${cancelJobs("cancel")}
SELECT (SELECT count(*) FROM flow)::integer AS found,
       (count(*) FILTER (WHERE status = ${STATE.cancelled}))::integer AS cancelled,
       (count(*) FILTER (WHERE status = ${STATE.running}))::integer AS cancel_requested
FROM cancel_moved`;

/**
 * Batch callbacks by whether they still wait: `waiting` (some member has
 * not ended), `skipped` (ended without starting: cancelled or dead-lettered
 * by the members' outcome or a cancel), `released` (queued, ran, or running).
 * One row per state that has callbacks. Reads each batch's flows row and its
 * callback by primary key. No parameters.
 */
export const flowCallbackStates = `
SELECT CASE
         WHEN j.status = ${STATE.waiting} THEN ${STATE.waiting}
         WHEN j.status IN (${STATE.cancelled}, ${STATE.dead}) AND j.started_at IS NULL THEN 'skipped'
         ELSE 'released'
       END AS state,
       count(*)::int AS count
FROM {{schema}}.flows AS f
JOIN {{schema}}.jobs AS j ON j.id = f.callback_job_id
WHERE f.kind = 'batch'
GROUP BY 1`;
