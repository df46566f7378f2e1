import { executionColumnsOf } from "./job-columns.js";
import { READY, RECORD_PENDING, STATE } from "./status-sets.js";

// Statements of the test helpers (`conveyor-jobs/testing`, store/testing-store.ts).
// Not among the store's bound queries (queries.ts): only tests run them.

/**
 * Make every retrying job due now, so a test's drain runs its retries
 * without waiting out their backoff. No parameters; returns how many moved.
 */
export const jobRetriesDueNow = `
UPDATE {{schema}}.jobs SET run_at = now(), updated_at = now()
WHERE status = ${STATE.retrying} AND run_at > now()
RETURNING id`;

/**
 * What a drain waits on: jobs ready to run now, jobs running, jobs retrying
 * (due or not), and sleeping jobs due within $1 ms.
 * $1 ms
 */
export const jobCountPending = `
SELECT count(*) FILTER (WHERE status IN (${READY}) AND run_at <= now())::int AS ready,
       count(*) FILTER (WHERE status = ${STATE.running})::int AS running,
       count(*) FILTER (WHERE status = ${STATE.retrying})::int AS retrying,
       count(*) FILTER (WHERE status = ${STATE.sleeping} AND run_at <= now() + $1::float8 * interval '1 millisecond')::int AS sleeping_soon
FROM {{schema}}.jobs`;

/**
 * Bring every timer of the schema's jobs $1 ms closer, as if that much time
 * had passed, without touching the clock: the run_at of sleeping jobs and of
 * queued and retrying jobs not yet due (a delay, a future runAt, a retry's
 * backoff), and the wake_at of every open sleep and wait record, which a
 * job that runs again sleeps or waits until. A wait without a deadline
 * (until $2) keeps it. One statement: a job's run_at and its records move
 * together. Returns how many jobs moved.
 * $1 ms, $2 the time that stands for no deadline (NO_DEADLINE)
 */
export const timeAdvance = `
WITH moved AS (
  UPDATE {{schema}}.jobs SET run_at = run_at - $1::float8 * interval '1 millisecond'
  WHERE run_at < $2::timestamptz AND (status = ${STATE.sleeping} OR (status IN (${READY}) AND run_at > now()))
  RETURNING id
), records AS (
  UPDATE {{schema}}.job_steps SET wake_at = wake_at - $1::float8 * interval '1 millisecond'
  WHERE state IN (${RECORD_PENDING}) AND wake_at < $2::timestamptz
)
SELECT count(*)::int AS jobs FROM moved`;

/**
 * Attempts that ended from $1 (timestamptz) on, oldest first, with their
 * job's kind, status, payload and result (the view job_attempts: an
 * attempt that ended its job successfully is on the job's history row).
 */
export const executionListEndedSince = `
SELECT ${executionColumnsOf("e")},
       j.kind, j.status AS job_status, j.payload, j.result
FROM {{schema}}.job_attempts AS e JOIN {{schema}}.jobs AS j ON j.id = e.job_id
WHERE e.finished_at >= $1
ORDER BY e.finished_at, e.id`;

/** The database's now(), where a drain starts counting attempts. No parameters. */
export const clockNow = `SELECT now() AS now`;

/** Drop a test's schema and everything in it; the schema name is quoted into the text. */
export const schemaDrop = `DROP SCHEMA IF EXISTS {{schema}} CASCADE`;
