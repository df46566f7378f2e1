// Batch handlers (worker/batch-run.ts): which batch each attempt ran in.
// Written when a batch starts, for display only: no job state depends on
// it, so it needs no fence (an attempt that loses its lease keeps the row
// that says where it ran).

/**
 * Record a batch's members, of the jobs that still exist. Sent without
 * waiting, it can meet the batch's own completion: the key-share lock on
 * each job row makes a completion that deletes the job (a kind that keeps
 * no succeeded jobs) wait for this insert, and then forget the row with
 * the job. It never waits itself (SKIP LOCKED), so it cannot deadlock with
 * a completion: a job being ended or deleted as it runs is not recorded.
 * $1 batch id, $2 job ids uuid[], $3 execution ids uuid[]
 */
export const jobBatchRecord = `
INSERT INTO {{schema}}.job_batch_members (job_id, execution_id, batch_id, batch_size)
SELECT m.job_id, m.execution_id, $1, cardinality($2::uuid[])
FROM unnest($2::uuid[], $3::uuid[]) AS m(job_id, execution_id)
JOIN (SELECT j.id FROM {{schema}}.jobs AS j WHERE j.id = ANY($2::uuid[]) FOR KEY SHARE OF j SKIP LOCKED) AS j ON j.id = m.job_id
ON CONFLICT DO NOTHING`;
