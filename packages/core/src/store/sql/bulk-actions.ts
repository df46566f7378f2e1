import { BULK_STATUS } from "./status-sets.js";

// Bulk action operations (table bulk_actions): the record of each, and the
// ownership of its walk. The batches themselves, whose WHERE is the job
// filter's, are built in bulk-action-batches.ts.
//
// A walk moves through the jobs in id order (see bulk-action-batches.ts).
//
// Ownership: a walk runs in the process named by `owner` while its lease
// lasts; every batch renews it. Each batch's transaction starts by locking
// the operation's row on the condition that it is still this owner's and
// still running (bulkActionLock), so a batch of a process that lost the
// operation (its lease lapsed and another took it over) writes nothing.

export const BULK_ACTION_COLUMNS = `id, tenant, action, filter, priority, queue, status, requested_by, total, touched,
  cancel_requested, error, created_at, updated_at, finished_at`;

/** The lease of a walk from now: $-param is its length in ms (float8). */
const leaseFrom = (param: string) => `now() + ${param}::float8 * interval '1 millisecond'`;

/**
 * A new operation, running and owned by the process that asked.
 * $1 id, $2 tenant|null, $3 action, $4 filter (json text), $5 priority|null, $6 queue|null,
 * $7 requested_by|null, $8 total|null, $9 owner, $10 lease ms, $11 states text[],
 * $12 cursor to start after|null, $13 walk until|null
 */
export const bulkActionInsert = `
INSERT INTO {{schema}}.bulk_actions
  (id, tenant, action, filter, priority, queue, requested_by, total, owner, lease_expires_at, states, last_job_id, walk_until)
VALUES ($1::uuid, $2::text, $3::text, $4::jsonb, $5::smallint, $6::text, $7::text, $8::bigint, $9::text, ${leaseFrom("$10")},
        $11::text[], $12::uuid, $13::uuid)
RETURNING ${BULK_ACTION_COLUMNS}`;

/** $1 id, $2 tenant|null (null: any; a tenant sees only its own operations) */
export const bulkActionGet = `
SELECT ${BULK_ACTION_COLUMNS} FROM {{schema}}.bulk_actions WHERE id = $1 AND ($2::text IS NULL OR tenant = $2)`;

/** $1 tenant|null, $2 cursor id|null (exclusive), $3 limit — newest first */
export const bulkActionList = `
SELECT ${BULK_ACTION_COLUMNS} FROM {{schema}}.bulk_actions
WHERE ($1::text IS NULL OR tenant = $1) AND ($2::uuid IS NULL OR id < $2)
ORDER BY id DESC
LIMIT $3`;

/**
 * Ask a running operation to stop. Its walk sees the flag before its next
 * batch and ends `cancelled`; one that nobody runs (no owner, or a lapsed
 * lease) ends `cancelled` here and now. Nothing for an operation that
 * already ended. $1 id, $2 tenant|null
 */
export const bulkActionCancel = `
UPDATE {{schema}}.bulk_actions AS b SET
  cancel_requested = true,
  status = CASE WHEN b.lease_expires_at IS NULL OR b.lease_expires_at < now() THEN ${BULK_STATUS.cancelled} ELSE b.status END,
  finished_at = CASE WHEN b.lease_expires_at IS NULL OR b.lease_expires_at < now() THEN now() END,
  owner = CASE WHEN b.lease_expires_at IS NULL OR b.lease_expires_at < now() THEN NULL ELSE b.owner END,
  lease_expires_at = CASE WHEN b.lease_expires_at IS NULL OR b.lease_expires_at < now() THEN NULL ELSE b.lease_expires_at END,
  updated_at = now()
WHERE b.id = $1 AND ($2::text IS NULL OR b.tenant = $2) AND b.status = ${BULK_STATUS.running}
RETURNING ${BULK_ACTION_COLUMNS}`;

/**
 * The first statement of each batch: lock the operation's row if it is
 * still running and this owner's, and read where its walk is. No row: the
 * batch must not run. $1 id, $2 owner
 */
export const bulkActionLock = `
SELECT cancel_requested, states, last_job_id, walk_until FROM {{schema}}.bulk_actions
WHERE id = $1 AND owner = $2 AND status = ${BULK_STATUS.running}
FOR UPDATE`;

/**
 * The last statement of each batch, in its transaction: move the cursor
 * and the count on, and either renew the lease or end the operation
 * (releasing it). Fenced by the owner, as bulkActionLock.
 * $1 id, $2 owner, $3 last job id done|null (null: unchanged), $4 jobs touched by the batch,
 * $5 lease ms, $6 final status|null (null: still running), $7 error|null
 */
export const bulkActionAdvance = `
UPDATE {{schema}}.bulk_actions SET
  last_job_id = coalesce($3::uuid, last_job_id),
  touched = touched + $4::bigint,
  status = coalesce($6::text, status),
  error = $7::text,
  finished_at = CASE WHEN $6::text IS NULL THEN NULL ELSE now() END,
  owner = CASE WHEN $6::text IS NULL THEN owner END,
  lease_expires_at = CASE WHEN $6::text IS NULL THEN ${leaseFrom("$5")} END,
  updated_at = now()
WHERE id = $1 AND owner = $2 AND status = ${BULK_STATUS.running}
RETURNING ${BULK_ACTION_COLUMNS}`;

/** Let go of a running operation (its process is closing), so the next sweep resumes it at once. $1 id, $2 owner */
export const bulkActionRelease = `
UPDATE {{schema}}.bulk_actions SET owner = NULL, lease_expires_at = NULL, updated_at = now()
WHERE id = $1 AND owner = $2 AND status = ${BULK_STATUS.running}`;

/**
 * The resume sweep: take over up to $3 running operations that nobody owns
 * or whose owner's lease lapsed. A row another sweep, a batch or a cancel
 * holds is skipped: each operation is taken by one process.
 * $1 owner, $2 lease ms, $3 limit
 */
export const bulkActionTakeOver = `
WITH target AS (
  SELECT id FROM {{schema}}.bulk_actions
  WHERE status = ${BULK_STATUS.running} AND (lease_expires_at IS NULL OR lease_expires_at < now())
  ORDER BY id
  LIMIT $3
  FOR UPDATE SKIP LOCKED
)
UPDATE {{schema}}.bulk_actions AS b SET owner = $1, lease_expires_at = ${leaseFrom("$2")}, updated_at = now()
FROM target WHERE b.id = target.id
RETURNING ${BULK_ACTION_COLUMNS.split(",").map((column) => `b.${column.trim()}`).join(", ")}`;

/**
 * Take one running operation to run it here: when nobody owns it, its
 * owner's lease lapsed, or it is already this owner's. No row: it ended,
 * or another live process runs it. $1 id, $2 owner, $3 lease ms
 */
export const bulkActionTake = `
UPDATE {{schema}}.bulk_actions SET owner = $2, lease_expires_at = ${leaseFrom("$3")}, updated_at = now()
WHERE id = $1 AND status = ${BULK_STATUS.running} AND (owner IS NULL OR owner = $2 OR lease_expires_at < now())
RETURNING ${BULK_ACTION_COLUMNS}`;

/**
 * The end of a walk's next window: the id $2 rows after $1 along the
 * primary key (an index-only read of those entries); none when fewer remain.
 * $1 id, $2 rows (at least 1)
 */
export const bulkActionWindowEnd = `
SELECT id FROM {{schema}}.jobs WHERE id > $1::uuid ORDER BY id OFFSET $2::integer - 1 LIMIT 1`;

/** Set a setting for the rest of the transaction (SET LOCAL with a bound value). $1 name, $2 value */
export const transactionSetting = `
SELECT set_config($1::text, $2::text, true)`;
