import { CLAIMED_COLUMNS, CLAIM_ROWS, IN_UNRESTRICTED_QUEUE } from "./claim-fragments.js";

// Claims that honour queue limits, pause and tenant fairness. The fast path
// (claims.ts jobClaim) skips every paused or limited queue; these statements
// are only run when a worker knows such queues or fairness is asked for.
//
// Lock order, everywhere: the queue_settings row (one queue per
// transaction) or the capped tenant_settings rows (by tenant), and only then
// job rows (SKIP LOCKED, so never waited on). Nothing locks a job row and
// then a settings row, so these claims cannot deadlock with each other or
// with completions.
//
// Why two statements per claim (lock, then claim): under READ COMMITTED a
// statement's snapshot is taken before it waits on a lock, so a single
// statement that locked the settings row and counted running jobs would miss
// the jobs claimed by the transaction it waited for. The claim statement
// starts after the lock is held and sees every earlier claim committed.
//
// Times here are statement_timestamp(), not now(): now() is fixed when the
// transaction begins, before the lock wait, so two claims could record
// starts out of the order in which they held the lock, and the rate window
// (started by the first claim in it) would not line up with the recorded
// started_at of its claims.

/**
 * What a worker needs to choose its claims: the queues that are limited but
 * not paused (claimed one by one with jobClaimFromLimitedQueue), and whether
 * any tenant has a concurrency cap (then the tenant-aware claim is used).
 * No parameters.
 */
export const claimRestrictions = `
SELECT coalesce((SELECT array_agg(name ORDER BY name) FROM {{schema}}.queue_settings
                 WHERE NOT paused AND (concurrency_limit IS NOT NULL OR rate_limit IS NOT NULL)), '{}') AS limited_queues,
       EXISTS (SELECT 1 FROM {{schema}}.tenant_settings WHERE concurrency_limit IS NOT NULL) AS tenant_caps`;

/**
 * Lock one queue's settings row: every limited claim of that queue queues
 * behind this lock, which is what makes its cap global across workers.
 * $1 queue
 */
export const queueSettingsLock = `
SELECT name FROM {{schema}}.queue_settings WHERE name = $1 FOR UPDATE`;

/**
 * Claim from one limited queue, its settings row already locked by this
 * transaction: at most $2, at most its cap minus the jobs running in it now,
 * and at most what is left of the rate window. The window is fixed: it starts
 * at the first claim after the previous window ended and admits rate_limit
 * claims for rate_interval_ms; the count is updated in this statement. A
 * paused queue (or one whose limits were removed) yields nothing here.
 * $1 worker_id, $2 limit, $3 kinds text[], $4 queue, $5 lease_ms, $6 execution ids uuid[] ($2 of them)
 */
export const jobClaimFromLimitedQueue = `
WITH settings AS (
  SELECT s.name, s.concurrency_limit, s.rate_limit, s.window_count,
         s.rate_limit IS NOT NULL AND (s.window_started_at IS NULL
           OR s.window_started_at + s.rate_interval_ms * interval '1 millisecond' <= statement_timestamp()) AS window_new
  FROM {{schema}}.queue_settings AS s
  WHERE s.name = $4 AND NOT s.paused AND (s.concurrency_limit IS NOT NULL OR s.rate_limit IS NOT NULL)
), allowance AS (
  SELECT greatest(0, least(
    $2::int,
    coalesce(st.concurrency_limit
             - (SELECT count(*)::int FROM {{schema}}.jobs AS r WHERE r.status = 'running' AND r.queue = $4), $2::int),
    CASE WHEN st.rate_limit IS NULL THEN $2::int
         WHEN st.window_new THEN st.rate_limit
         ELSE st.rate_limit - st.window_count END)) AS n
  FROM settings AS st
), claimable AS (
  SELECT id FROM {{schema}}.jobs
  WHERE status IN ('queued', 'retrying') AND run_at <= statement_timestamp()
    AND kind = ANY($3::text[]) AND queue = $4
  ORDER BY priority, run_at, id
  LIMIT coalesce((SELECT n FROM allowance), 0)
  FOR UPDATE SKIP LOCKED
)${CLAIM_ROWS}, counted AS (
  UPDATE {{schema}}.queue_settings AS s SET
    window_started_at = CASE WHEN st.window_new THEN statement_timestamp() ELSE s.window_started_at END,
    window_count = CASE WHEN st.window_new THEN 0 ELSE s.window_count END + (SELECT count(*)::int FROM claimed)
  FROM settings AS st
  WHERE s.name = st.name AND st.rate_limit IS NOT NULL AND EXISTS (SELECT 1 FROM claimed)
)
SELECT ${CLAIMED_COLUMNS} FROM claimed ORDER BY priority, run_at, id`;

/**
 * Lock every capped tenant's settings row, in tenant order, so the running
 * count the fair claim reads next is exact. Serializes tenant-aware claims
 * while any cap exists (caps are meant for a few noisy tenants).
 * No parameters.
 */
export const tenantSettingsLockCapped = `
SELECT tenant FROM {{schema}}.tenant_settings WHERE concurrency_limit IS NOT NULL ORDER BY tenant FOR UPDATE`;

/**
 * Tenant-fair claim over the queues the fast path serves (never paused or
 * limited ones). A recursive CTE walks the distinct tenants with ready jobs
 * through jobs_ready_by_tenant_idx (one index probe per tenant, however big
 * the backlog); for each, a LATERAL takes its next jobs in (priority, run_at)
 * order, at most its cap minus its running jobs. Each candidate gets a
 * position: the tenant's running jobs (all workers) plus its turn (1 for its
 * first candidate, 2 for its second…), and the $2 lowest positions win. That
 * is water-filling: slots go to the tenants with the fewest jobs running, so
 * with k tenants ready each holds about 1/k of the running jobs, and a tenant
 * that just enqueued starts its first job in the next claim that has a free
 * slot, whatever another tenant's backlog. (Dealing turns alone is not
 * enough: a worker freeing one slot at a time would give it to the tenant
 * with the oldest job every time.) Rows taken meanwhile by another worker
 * are skipped, not waited on.
 * $1 worker_id, $2 limit, $3 kinds text[], $4 queues text[]|null (null: all), $5 lease_ms, $6 execution ids uuid[] ($2 of them)
 */
export const jobClaimFair = `
WITH RECURSIVE tenants AS (
  (SELECT j.tenant FROM {{schema}}.jobs AS j
   WHERE j.status IN ('queued', 'retrying') ORDER BY j.tenant LIMIT 1)
  UNION ALL
  SELECT (SELECT j.tenant FROM {{schema}}.jobs AS j
          WHERE j.status IN ('queued', 'retrying') AND j.tenant > t.tenant ORDER BY j.tenant LIMIT 1)
  FROM tenants AS t WHERE t.tenant IS NOT NULL
), running_by_tenant AS (
  SELECT r.tenant, count(*)::int AS n FROM {{schema}}.jobs AS r WHERE r.status = 'running' GROUP BY r.tenant
), room AS (
  SELECT t.tenant, coalesce(rt.n, 0) AS running,
         CASE WHEN ts.concurrency_limit IS NULL THEN $2::int
              ELSE greatest(0, ts.concurrency_limit - coalesce(rt.n, 0)) END AS n
  FROM tenants AS t
  LEFT JOIN running_by_tenant AS rt ON rt.tenant = t.tenant
  LEFT JOIN {{schema}}.tenant_settings AS ts ON ts.tenant = t.tenant
  WHERE t.tenant IS NOT NULL
), candidates AS (
  SELECT c.id, c.priority, c.run_at, room.running + c.turn AS position
  FROM room CROSS JOIN LATERAL (
    SELECT j.id, j.priority, j.run_at, row_number() OVER (ORDER BY j.priority, j.run_at, j.id) AS turn
    FROM {{schema}}.jobs AS j
    WHERE j.status IN ('queued', 'retrying') AND j.tenant = room.tenant AND j.run_at <= now()
      AND j.kind = ANY($3::text[])
      AND ($4::text[] IS NULL OR j.queue = ANY($4::text[]))
      AND ${IN_UNRESTRICTED_QUEUE}
    ORDER BY j.priority, j.run_at, j.id
    LIMIT least(room.n, $2::int)
  ) AS c
), chosen AS (
  SELECT id FROM candidates ORDER BY position, priority, run_at, id LIMIT $2
), claimable AS (
  -- Locking re-checks the row: one claimed elsewhere since the snapshot is skipped or no longer ready.
  SELECT id FROM {{schema}}.jobs
  WHERE id = ANY(ARRAY(SELECT id FROM chosen)) AND status IN ('queued', 'retrying')
  FOR UPDATE SKIP LOCKED
)${CLAIM_ROWS}
SELECT ${CLAIMED_COLUMNS} FROM claimed ORDER BY priority, run_at, id`;
