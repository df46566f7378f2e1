import { COPY_COLUMNS } from "./copy-columns.js";
import { claimKeys } from "./key-fragments.js";
import { cancelJobs } from "./job-action-fragments.js";
import { executionColumnsOf, JOB_COLUMNS, jobColumnsOf } from "./job-columns.js";
import { COMMIT_WITHOUT_WAITING, SKIP_NOTIFY_TRIGGER, wakeAfterCommit } from "./transaction-settings.js";
import { CANCELLABLE } from "./status-sets.js";

// `{{schema}}` is replaced once by the quoted schema name (see queries.ts).
// run_at is computed by the database clock: an explicit time wins, else now() + delay.

/**
 * The transaction's now() in epoch microseconds (exact in a float8 until the
 * year 2255), for inserts whose rows the client completes itself: created_at
 * is now(), and run_at is computed from it (store/copy-text.ts runAtMicros).
 */
const NOW_MICROS = "round(extract(epoch FROM now()) * 1000000)::float8 AS now_us";

/**
 * What an insert returns: only what the database decided. Every other column
 * of a fresh job is what was inserted or a column default (see
 * rowToInsertedJob), so the row is not sent back and parsed again: returning
 * every column made a single enqueue 25% slower (1,641 against 2,071 a
 * second, the statement alone on one connection) and parsed seven
 * timestamps per row of a batch. Times as whole epoch milliseconds, which
 * is all a Date holds, read as a number instead of parsed from text.
 */
export const INSERTED_COLUMNS = `id, floor(extract(epoch FROM run_at) * 1000)::float8 AS run_at_ms,
  floor(extract(epoch FROM created_at) * 1000)::float8 AS created_at_ms`;

// Each insert comes in two forms. Rows with an idempotency key first claim
// it in job_keys (its primary key settles concurrent enqueues, whatever
// state the key's job has reached since), and only the rows whose key was
// claimed go in. A row without a key cannot conflict there, so keyless
// inserts skip that statement.



/**
 * $1 id, $2 tenant, $3 queue, $4 kind, $5 payload (json text), $6 priority, $7 max_attempts, $8 run_at|null,
 * $9 delay_ms|null, $10 idempotency_key|null; $11 and $12 belong to WAKE_ONE (see it); $13 trace_context (json text)|null, $14 limit_key|null
 *
 * The insert trigger is always told to skip: the statement sends its own
 * NOTIFY (WAKE_ONE), which the trigger's set-based pass over its transition
 * table cost 45 µs of server time to do for one row, against 7 µs for the
 * trigger to see the setting and return (EXPLAIN ANALYZE, PostgreSQL 15,
 * 300 inserts each): a single enqueue's execution went from 150 to 109 µs.
 */
const INSERT_ONE = `
INSERT INTO {{schema}}.jobs_live (id, tenant, queue, kind, payload, priority, max_attempts, run_at, idempotency_key, trace_context, limit_key)
SELECT $1::uuid, $2::text, $3::text, $4::text, $5::jsonb, $6::smallint, $7::integer,
       coalesce($8::timestamptz, now() + coalesce($9::float8, 0) * interval '1 millisecond'), $10::text, $13::jsonb, $14::text
WHERE ${SKIP_NOTIFY_TRIGGER}`;

/**
 * The wake-up of a single insert, as a RETURNING column (null). $11 wake
 * after commit: true leaves it to the caller once it has committed
 * (routines/jobs-notify-ready.ts, store/queue-waker.ts); false notifies channel $12 now, so
 * the notification goes out at the commit of the statement's transaction,
 * the caller's own when the insert runs inside it, exactly as the trigger's
 * would. A job not yet due wakes nobody.
 */
const WAKE_ONE = `CASE WHEN NOT $11::boolean AND run_at <= now() THEN pg_notify($12::text, queue) END AS woken`;

/**
 * INSERT_ONE's columns, each an array: $1 uuid[] … $10 text[], $12 trace_context (json text)[] and $13 limit keys text[]; $11 wake after
 * commit (true: no NOTIFY in this transaction; the caller sends the wake-up
 * once it has committed, see routines/jobs-notify-ready.ts; false: the insert trigger
 * notifies, one pass over the whole batch).
 * $1 sets the row count; a shorter array, or a NULL one, is padded with NULLs by unnest().
 */
const INSERT_MANY = `
INSERT INTO {{schema}}.jobs_live (id, tenant, queue, kind, payload, priority, max_attempts, run_at, idempotency_key, trace_context, limit_key)
SELECT id, tenant, queue, kind, payload::jsonb, priority, max_attempts,
       coalesce(run_at, now() + coalesce(delay_ms, 0) * interval '1 millisecond'), idempotency_key, trace_context::jsonb, limit_key
FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[], $6::smallint[], $7::integer[],
            $8::timestamptz[], $9::float8[], $10::text[], $12::text[], $13::text[])
  AS input(id, tenant, queue, kind, payload, priority, max_attempts, run_at, delay_ms, idempotency_key, trace_context, limit_key)
WHERE ${wakeAfterCommit("$11")}`;

/**
 * The first statement of a COPY of jobs (JobStore.jobCopyMany), inside its
 * transaction: $1 wake after commit, as INSERT_MANY's $11. Returns the
 * transaction's now() (NOW_MICROS): COPY takes values, not expressions, so
 * the client computes each row's run_at from it.
 */
export const jobCopyBegin = `
SELECT ${NOW_MICROS} WHERE ${wakeAfterCommit("$1")}`;

/** New jobs as COPY text lines (store/copy-text.ts); the other columns take their defaults. */
export const jobCopyIn = `COPY {{schema}}.jobs_live (${COPY_COLUMNS}) FROM STDIN`;

/**
 * Wake the workers of these queues ($1 channel, $2 queue names text[]), for
 * jobs inserted and committed with wake-after-commit. Nothing durable: the
 * commit does not wait for the disk, and a lost wake-up costs a poll interval.
 */
export const queuesWake = `
SELECT pg_notify($1, queue) FROM unnest($2::text[]) AS queue WHERE ${COMMIT_WITHOUT_WAITING}`;

/** One job; no row returned (and no wake-up) when its idempotency key already exists. */
export const jobInsert = `
WITH ${claimKeys("SELECT $2::text, $10::text, $1::uuid")}
${INSERT_ONE} AND ($10::text IS NULL OR EXISTS (SELECT 1 FROM claimed))
RETURNING ${INSERTED_COLUMNS}, ${WAKE_ONE}`;

/** One job without an idempotency key ($10 is null). */
export const jobInsertKeyless = `${INSERT_ONE}
RETURNING ${INSERTED_COLUMNS}, ${WAKE_ONE}`;

/** Many jobs; rows whose idempotency key already exists are skipped (not returned). */
export const jobInsertMany = `
WITH ${claimKeys("SELECT * FROM unnest($2::text[], $10::text[], $1::uuid[])")}
${INSERT_MANY} AND (input.idempotency_key IS NULL OR input.id IN (SELECT job_id FROM claimed))
RETURNING ${INSERTED_COLUMNS}`;

/**
 * Many jobs, none with an idempotency key: every row goes in, so nothing
 * comes back but the transaction's now() (NOW_MICROS), from which the client
 * computes each job's created_at and run_at exactly as this statement does
 * (as for COPY). Returning three columns for each of 1,000 rows cost the
 * server building and sending them and the client parsing them.
 */
export const jobInsertManyKeyless = `
WITH inserted AS (${INSERT_MANY})
SELECT ${NOW_MICROS}`;

/**
 * The stored trace contexts of claimed jobs, read by a worker only while a
 * tracer provider is registered (column trace_context): by primary key, one
 * statement per claimed batch. With them, the contexts of each job's
 * dependencies, which its attempt's span links: at most
 * 128, OpenTelemetry's default limit of links per span. $1 job ids uuid[]
 */
export const jobTraceContexts = `
SELECT j.id, j.trace_context,
       (SELECT coalesce(array_agg(parent.trace_context), '{}') FROM (
          SELECT p.trace_context FROM {{schema}}.job_dependencies AS d
          JOIN {{schema}}.jobs AS p ON p.id = d.depends_on
          WHERE d.job_id = j.id AND p.trace_context IS NOT NULL
          ORDER BY d.depends_on LIMIT 128) AS parent) AS dependency_contexts
FROM {{schema}}.jobs AS j WHERE j.id = ANY($1::uuid[])`;

/** $1 tenant, $2 idempotency keys text[]; `requested_key` names the key each job answers */
export const jobGetByIdempotencyKeys = `
SELECT ${jobColumnsOf("jobs")}, input.key AS requested_key
FROM unnest($2::text[]) AS input(key)
JOIN {{schema}}.jobs ON jobs.tenant = $1 AND jobs.idempotency_key = input.key`;

/** $1 id, $2 tenant|null (null: any tenant) */
export const jobGet = `
SELECT ${JOB_COLUMNS} FROM {{schema}}.jobs WHERE id = $1 AND ($2::text IS NULL OR tenant = $2)`;

/**
 * A job's attempts, oldest first: the ended ones and, while the job runs,
 * its running attempt, read from the job row (view job_attempts).
 * $1 job id
 */
export const executionListByJob = `
SELECT ${executionColumnsOf("a")}, b.batch_id, b.batch_size
FROM {{schema}}.job_attempts AS a
LEFT JOIN {{schema}}.job_batch_members AS b ON b.job_id = a.job_id AND b.execution_id = a.id
WHERE a.job_id = $1 ORDER BY a.started_at, a.id`;

/**
 * A job's requeues, resumes, reruns and bulk retries (job_requeues), in the
 * order they happened. $1 job id
 */
export const requeueListByJob = `
SELECT at, action, from_step, bulk_action_id FROM {{schema}}.job_requeues WHERE job_id = $1 ORDER BY seq`;

/**
 * Cancel: a waiting, queued or retrying job is cancelled at once; a running one gets
 * the flag its worker is notified of at commit. Terminal jobs match nothing.
 * The row lock makes this safe against a concurrent claim: whichever commits
 * first, the other re-reads the row.
 * $1 id, $2 tenant|null
 */
export const jobCancel = `
WITH target AS (
  SELECT j.id, j.status FROM {{schema}}.jobs_live AS j
  WHERE j.id = $1 AND ($2::text IS NULL OR j.tenant = $2) AND j.status IN (${CANCELLABLE})
  FOR UPDATE
)${cancelJobs("cancel")}
SELECT ${JOB_COLUMNS} FROM cancel_moved`;
