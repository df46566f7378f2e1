import { claimKeys } from "./key-fragments.js";
import { JOB_COLUMNS } from "./job-columns.js";
import { READY } from "./status-sets.js";

// Unique jobs. The partial unique index jobs_unique_key_idx
// on (tenant, unique_key) is the arbiter: concurrent enqueues with one key
// queue up on it, so there is never a check-then-insert.

/**
 * Insert a job that carries a unique key; when another job holds the key,
 * settle with it in the same statement. The conflicting row is locked either
 * way; it is updated (debounce) only when $13 asks to replace, the holder is
 * still waiting, is of the same kind, and is not the job this request's own
 * idempotency key created (that is a replay, answered as such). No row comes
 * back when nothing was written, including when the idempotency key already
 * names a job: the caller then reads which job answers. The returned id
 * tells an insert ($1) from a replacement (the holder's id).
 * updated_at uses clock_timestamp(): replacements of one holder are
 * serialised by its row lock, so their updated_at is their write order.
 * $1 id, $2 tenant, $3 queue, $4 kind, $5 payload (json text), $6 priority, $7 max_attempts, $8 run_at|null,
 * $9 delay_ms|null, $10 idempotency_key|null, $11 unique_key, $12 unique_states text[], $13 replace boolean,
 * $14 replace priority too boolean, $15 trace_context (json text)|null (a replacement takes the newer enqueue's), $16 limit_key|null
 */
export const jobInsertUnique = `
WITH inserted AS (
INSERT INTO {{schema}}.jobs_live AS jobs (id, tenant, queue, kind, payload, priority, max_attempts, run_at, idempotency_key,
                             unique_key, unique_states, trace_context, limit_key)
SELECT $1::uuid, $2::text, $3::text, $4::text, $5::jsonb, $6::smallint, $7::integer,
       coalesce($8::timestamptz, now() + coalesce($9::float8, 0) * interval '1 millisecond'), $10::text,
       $11::text, $12::text[], $15::jsonb, $16::text
WHERE $10::text IS NULL
   OR NOT EXISTS (SELECT 1 FROM {{schema}}.job_keys WHERE tenant = $2 AND idempotency_key = $10)
ON CONFLICT (tenant, unique_key) WHERE unique_key IS NOT NULL DO UPDATE SET
  payload = EXCLUDED.payload,
  run_at = EXCLUDED.run_at,
  priority = CASE WHEN $14::boolean THEN EXCLUDED.priority ELSE jobs.priority END,
  trace_context = EXCLUDED.trace_context,
  updated_at = clock_timestamp()
WHERE $13::boolean
  AND jobs.status IN (${READY})
  AND jobs.kind = EXCLUDED.kind
  AND (EXCLUDED.idempotency_key IS NULL OR jobs.idempotency_key IS DISTINCT FROM EXCLUDED.idempotency_key)
RETURNING ${JOB_COLUMNS}
), ${claimKeys("SELECT $2::text, $10::text, id FROM inserted WHERE id = $1::uuid")}
SELECT ${JOB_COLUMNS} FROM inserted`;

/** The job holding a unique key, if any. $1 tenant, $2 unique_key */
export const jobGetByUniqueKey = `
SELECT ${JOB_COLUMNS} FROM {{schema}}.jobs WHERE tenant = $1 AND unique_key = $2`;
