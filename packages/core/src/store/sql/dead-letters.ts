import { requeueDeadJobs } from "./job-action-fragments.js";
import { JOB_COLUMNS } from "./job-columns.js";
import { recordRequeues } from "./requeue-fragments.js";
import { REQUEUE_ACTION } from "./status-sets.js";

export const DEAD_LETTER_COLUMNS =
  "id, job_id, tenant, queue, kind, payload, attempts, max_attempts, reason, last_error, history, dead_at";

/** $1 tenant|null, $2 kind|null, $3 queue|null, $4 cursor id|null (exclusive), $5 limit — newest first */
export const deadLetterList = `
SELECT ${DEAD_LETTER_COLUMNS} FROM {{schema}}.dead_letter_jobs
WHERE ($1::text IS NULL OR tenant = $1)
  AND ($2::text IS NULL OR kind = $2)
  AND ($3::text IS NULL OR queue = $3)
  AND ($4::uuid IS NULL OR id < $4)
ORDER BY id DESC
LIMIT $5`;

/** $1 dead-letter id, $2 tenant|null */
export const deadLetterGet = `
SELECT ${DEAD_LETTER_COLUMNS} FROM {{schema}}.dead_letter_jobs
WHERE id = $1 AND ($2::text IS NULL OR tenant = $2)`;

/**
 * Put a dead job back in the queue with fresh attempts and the same job id.
 * The entry is deleted in the same statement, so a requeue happens once
 * however many callers race. The execution history stays in job_executions.
 * A job with dependencies is released from them (its counts are deleted):
 * it runs now, whatever they are. Jobs that depend on this one are re-armed
 * at its commit: its move records the return (routines/jobs-ended.ts).
 * The requeue is recorded for the job's timeline (job_requeues).
 * $1 dead-letter id, $2 tenant|null
 */
export const deadLetterRequeue = `
WITH entry AS (
  DELETE FROM {{schema}}.dead_letter_jobs WHERE id = $1 AND ($2::text IS NULL OR tenant = $2) RETURNING job_id
), released AS (
  DELETE FROM {{schema}}.job_dependency_state WHERE job_id = ANY(ARRAY(SELECT job_id FROM entry))
), target AS (
  SELECT j.id, j.status FROM {{schema}}.jobs_dead AS j WHERE j.id = ANY(ARRAY(SELECT job_id FROM entry)) FOR UPDATE
)${requeueDeadJobs("requeue")}${recordRequeues("requeue_recorded", "requeue_moved", { action: REQUEUE_ACTION.requeue })}
SELECT ${JOB_COLUMNS} FROM requeue_moved`;

/** Delete a dead job for good: the entry, the job and its executions (by cascade and trigger). $1 dead-letter id, $2 tenant|null */
export const deadLetterPurge = `
DELETE FROM {{schema}}.jobs AS j
USING {{schema}}.dead_letter_jobs AS d
WHERE d.id = $1 AND ($2::text IS NULL OR d.tenant = $2) AND j.id = d.job_id
RETURNING d.id`;
