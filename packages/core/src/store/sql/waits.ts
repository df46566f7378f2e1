// Waits for a job's end (client/wait-for.ts): a row per wait, which the
// statement that ends the job reads (routines/jobs-ended.ts).

/**
 * Start a wait: record it until $3 ms from now, mark the job awaited (so
 * that its end tells the waiters), and delete the waits whose time
 * has passed (left by processes that died). The caller reads the job after
 * this commits, so an end that commits first is seen by that read.
 * $1 job id, $2 waiter id, $3 ms the wait may last at most
 */
export const jobWaitAdd = `
WITH expired AS (
  DELETE FROM {{schema}}.job_waits WHERE expires_at < now()
), flagged AS (
  UPDATE {{schema}}.jobs SET awaited = true WHERE id = $1 AND NOT awaited
)
INSERT INTO {{schema}}.job_waits (job_id, waiter, expires_at)
VALUES ($1, $2, now() + $3 * interval '1 millisecond')
ON CONFLICT (job_id, waiter) DO UPDATE SET expires_at = EXCLUDED.expires_at`;

/** End a wait. $1 job id, $2 waiter id */
export const jobWaitRemove = `
DELETE FROM {{schema}}.job_waits WHERE job_id = $1 AND waiter = $2`;
