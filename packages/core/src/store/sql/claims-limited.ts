import { CLAIMED_COLUMNS } from "./claim-fragments.js";

// Claims that honour queue limits, pause and tenant fairness. The fast path
// (claims.ts jobClaim) skips every paused or limited queue; these statements
// are only run when a worker knows such queues or fairness is asked for.
//
// The capped claims are functions (src/store/routines/job-claim-*.ts): each locks its cap, then
// counts and claims, in one statement the server runs to its commit whatever
// the client does meanwhile, so a worker that freezes or vanishes mid-claim
// never holds a cap's lock. Why lock before counting, and why a function:
// see routines/job-claim-from-limited-queue.ts.
//
// Lock order, everywhere: the queue_settings row (one queue per
// transaction) or the capped tenant_settings rows (by tenant), and only then
// job rows (SKIP LOCKED, so never waited on). Nothing locks a job row and
// then a settings row, so these claims cannot deadlock with each other or
// with completions.

/**
 * What a worker needs to choose its claims: the queues that are limited but
 * not paused and have no key limits (claimed one by one with
 * jobClaimFromLimitedQueue), whether any tenant has a concurrency cap (then
 * the tenant-aware claim is used), and the queues with key limits (claimed
 * one by one with jobClaimByKey, within their queue limits too).
 * No parameters.
 */
export const claimRestrictions = `
SELECT coalesce((SELECT array_agg(s.name ORDER BY s.name) FROM {{schema}}.queue_settings AS s
                 WHERE NOT s.paused AND (s.concurrency_limit IS NOT NULL OR s.rate_limit IS NOT NULL)
                   AND NOT EXISTS (SELECT 1 FROM {{schema}}.key_limits AS d WHERE d.queue = s.name AND d.limit_key = '')), '{}') AS limited_queues,
       EXISTS (SELECT 1 FROM {{schema}}.tenant_settings WHERE concurrency_limit IS NOT NULL) AS tenant_caps,
       coalesce((SELECT array_agg(queue ORDER BY queue) FROM {{schema}}.key_limits WHERE limit_key = ''), '{}') AS key_limited_queues`;

/**
 * Claim from one limited queue (function job_claim_from_limited_queue): lock
 * its settings row, then claim at most $2, at most its cap minus the jobs
 * running in it now, and at most what is left of the rate window. The window
 * is fixed: it starts at the first claim after the previous window ended and
 * admits rate_limit claims for rate_interval_ms; the count is updated by the
 * claim. A paused queue (or one whose limits were removed) yields nothing.
 * $1 worker_id, $2 limit, $3 kinds text[], $4 queue, $5 lease_ms, $6 execution ids uuid[] ($2 of them), $7 lock_timeout_ms
 */
export const jobClaimFromLimitedQueue = `
SELECT ${CLAIMED_COLUMNS} FROM {{schema}}.job_claim_from_limited_queue($1, $2, $3::text[], $4, $5, $6::uuid[], $7)`;

/**
 * Tenant-fair claim over the queues the fast path serves (never paused or
 * limited ones), function job_claim_fair. It first locks every capped
 * tenant's settings row, in tenant order, so the running counts it reads are
 * exact; that serializes tenant-aware claims while any cap exists (caps are
 * meant for a few noisy tenants). Then a recursive CTE walks the distinct tenants with ready jobs
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
 * $1 worker_id, $2 limit, $3 kinds text[], $4 queues text[]|null (null: all), $5 lease_ms, $6 execution ids uuid[] ($2 of them), $7 lock_timeout_ms
 */
export const jobClaimFair = `
SELECT ${CLAIMED_COLUMNS} FROM {{schema}}.job_claim_fair($1, $2, $3::text[], $4::text[], $5, $6::uuid[], $7)`;

/**
 * Claim from one key-limited queue (function job_claim_by_key, migration
 * 016): walk up to $9 keys with ready jobs after the cursor $8 (wrapping
 * around), lock their state rows SKIP LOCKED, then take from each at most
 * its concurrency limit minus its running jobs and what is left of its rate
 * window, fewest running first. Every row also carries next_key, the last
 * key claimed from in walk order (the worker's next cursor). A paused queue, or one whose key limits were removed, yields nothing.
 * $1 worker_id, $2 limit, $3 kinds text[], $4 queue, $5 lease_ms, $6 execution ids uuid[], $7 lock_timeout_ms,
 * $8 cursor key|null, $9 keys to walk
 */
export const jobClaimByKey = `
SELECT ${CLAIMED_COLUMNS}, next_key FROM {{schema}}.job_claim_by_key($1, $2, $3::text[], $4, $5, $6::uuid[], $7, $8, $9)`;
