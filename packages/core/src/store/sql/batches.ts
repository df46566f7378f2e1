// Batch handlers (worker/batch-run.ts): which batch each attempt ran in.
// Written when a batch starts, for display only: no job state depends on
// it, so it needs no fence (an attempt that loses its lease keeps the row
// that says where it ran).

/**
 * Record a batch's members.
 * $1 batch id, $2 job ids uuid[], $3 execution ids uuid[]
 */
export const jobBatchRecord = `
INSERT INTO {{schema}}.job_batch_members (job_id, execution_id, batch_id, batch_size)
SELECT m.job_id, m.execution_id, $1, cardinality($2::uuid[])
FROM unnest($2::uuid[], $3::uuid[]) AS m(job_id, execution_id)
ON CONFLICT DO NOTHING`;
