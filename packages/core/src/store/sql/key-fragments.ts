// Idempotency keys (job_keys), shared by every insert that takes one
// (jobs.ts, flows.ts, unique.ts). Not statements themselves, so this module
// is not among the store's queries.

/**
 * A CTE `claimed(job_id)`: the keys of $rows claimed for their jobs, a key
 * already taken (by an earlier enqueue, or an earlier row of the same
 * statement) claiming nothing. `rows` yields (tenant, idempotency_key, id).
 */
export function claimKeys(rows: string): string {
  return `claimed AS (
  INSERT INTO {{schema}}.job_keys (tenant, idempotency_key, job_id)
  SELECT k.tenant, k.idempotency_key, k.id FROM (${rows}) AS k(tenant, idempotency_key, id)
  WHERE k.idempotency_key IS NOT NULL
  ON CONFLICT DO NOTHING
  RETURNING job_id
)`;
}
