/**
 * Every default and limit in Conveyor, in one place. Options documented
 * elsewhere point here; nothing sets a default anywhere else.
 */

/** Schema that holds Conveyor's tables. */
export const DEFAULT_SCHEMA = "conveyor";
/**
 * How an attempt's span relates to the span that enqueued its job: "link"
 * (a trace of its own per attempt, linked to the enqueue's), as the
 * OpenTelemetry messaging conventions advise for work that may run much
 * later or many times; "child" suits short jobs (docs/tracing.md).
 */
export const DEFAULT_TRACING_ATTEMPTS = "link";
/** Tenant a job belongs to when none is given. */
export const DEFAULT_TENANT = "default";
/** Queue a job goes to when neither its definition nor the enqueue call names one. */
export const DEFAULT_QUEUE = "default";
/** Priority when none is given. Lower numbers run first. */
export const DEFAULT_PRIORITY = 0;
/** Lowest priority accepted, -1000. Priorities are limited so they fit a smallint and stay meaningful. */
export const MIN_PRIORITY = -1000;
/** Highest priority accepted, 1000 (runs last). */
export const MAX_PRIORITY = 1000;
/** Attempts before a failing job goes to the dead-letter queue: 25. */
export const DEFAULT_MAX_ATTEMPTS = 25;
/** The largest `maxAttempts` accepted: 1000. */
export const MAX_MAX_ATTEMPTS = 1000;

/** Retry backoff base, 1 s: delay = min(cap, base * 2^(attempt-1)), then jittered. */
export const DEFAULT_BACKOFF_BASE_MS = 1_000;
/** Retry backoff cap: 1 hour. */
export const DEFAULT_BACKOFF_CAP_MS = 60 * 60 * 1000;
/** Fraction of the delay that is randomised (0 = none, 1 = "full jitter"). */
export const DEFAULT_BACKOFF_JITTER = 0.2;

/** Per-attempt time limit; 0 means none. */
export const DEFAULT_TIMEOUT_MS = 0;

/**
 * `waitFor`: how long it waits for a job to end before it throws
 * `WaitTimeoutError`, 5 minutes. Longer waits pass their own `timeoutMs`
 * (up to `MAX_WAIT_TIMEOUT_MS`).
 */
export const DEFAULT_WAIT_TIMEOUT_MS = 5 * 60 * 1000;
/** `waitFor`: the longest `timeoutMs` accepted, 2,147,483,647 ms (about 24.8 days, the longest a Node.js timer waits). */
export const MAX_WAIT_TIMEOUT_MS = 2_147_483_647;
/**
 * `waitFor`: how often it reads the job when no notification came, 1 s.
 * A notification from the end's commit wakes it at once; reading is the
 * fallback for a LISTEN connection that is down or unavailable (a
 * transaction pooler without `listenConnectionString`).
 */
export const WAIT_POLL_INTERVAL_MS = 1_000;
/**
 * `waitFor`: its row in job_waits outlives its timer by 1 minute, so an
 * end at the wait's last moment still notifies; a row left by a process
 * that died is deleted by the next wait to start once this has passed.
 */
export const WAIT_ROW_MARGIN_MS = 60_000;

/** Longest kind or queue name, 128 characters: identifiers people read in dashboards. */
export const MAX_NAME_LENGTH = 128;
/** Characters a kind or queue name may use: letters, digits and `_ . : - /`. */
export const NAME_PATTERN = /^[A-Za-z0-9_.:\-/]+$/;
/** Longest tenant, 128 characters (tenants come from callers; bound them). */
export const MAX_TENANT_LENGTH = 128;
/** Longest idempotency key, 255 characters. */
export const MAX_IDEMPOTENCY_KEY_LENGTH = 255;
/**
 * CLI progress (`conveyor jobs enqueue --file`, bulk actions) shows a rate
 * only after this long, 1 s: over a shorter time a rate says nothing (two
 * lines read in a millisecond are not 2,000 jobs a second).
 */
export const PROGRESS_RATE_MIN_MS = 1_000;
/** Longest limit key, 256 characters (a host name fits; the jobs table checks the same bound). */
export const MAX_LIMIT_KEY_LENGTH = 256;
/**
 * An error that quotes a refused value quotes at most its first 64
 * characters, then says how long it was: a value sent by mistake (a whole
 * payload as a key) would otherwise fill logs and API answers.
 */
export const MAX_QUOTED_VALUE_LENGTH = 64;

/**
 * Run times: the earliest a job's run time may be, 2000-01-01T00:00:00Z in
 * epoch ms (inclusive). An earlier `runAt` is almost always seconds passed
 * as milliseconds (`new Date(1_700_000_000)` is in January 1970). Migration
 * 013 holds the jobs table to the same bound.
 */
export const MIN_RUN_AT_MS = Date.UTC(2000, 0, 1);
/**
 * Run times: the first instant past the bound, 10000-01-01T00:00:00Z in epoch
 * ms (exclusive), so every run time has a four-digit year: the form ISO 8601
 * text, JSON clients and PostgreSQL's interval arithmetic all handle.
 */
export const MAX_RUN_AT_MS = Date.UTC(10000, 0, 1);
/**
 * Delays: the longest `delayMs` (and `RetryAfter` delay, and backoff cap)
 * accepted, 10 years (315,360,000,000 ms). Further ahead than that is a
 * unit mistake, not a schedule; give `runAt` for a fixed far date.
 */
export const MAX_DELAY_MS = 10 * 365 * 24 * 60 * 60 * 1000;

/** Page size for `listJobs` and `deadLetters.list` (and every other list) when none is given: 50. */
export const DEFAULT_LIST_LIMIT = 50;
/** The most one page returns: 1000. */
export const MAX_LIST_LIMIT = 1000;
/**
 * Searches and counts (`listJobs`, `countJobs`, `overview`, queue counts):
 * the longest one statement may run, 5 s, set as the statement's
 * `statement_timeout` in its own transaction (so it holds behind a pooler
 * in transaction mode too). A filter no index serves (an error text alone)
 * could otherwise read the whole jobs table. A search that hits it throws
 * `SearchTimeoutError`; a count answers the planner's estimate instead.
 * 0 turns it off.
 */
export const DEFAULT_SEARCH_TIMEOUT_MS = 5_000;
/** The longest error text a search takes, 500 characters. */
export const MAX_ERROR_SEARCH_LENGTH = 500;
/** The largest payload a containment search takes, as JSON text: 8 KiB. A payload filter is a few fields, never a whole payload. */
export const MAX_PAYLOAD_SEARCH_BYTES = 8 * 1024;
/**
 * `countJobs`: jobs counted one by one at most, 10,000; above that, the
 * count is the planner's estimate (`estimated: true`). Counting stops
 * once one more than this has matched.
 */
export const DEFAULT_EXACT_COUNT_LIMIT = 10_000;
/** The largest `exactCountLimit` accepted: 1,000,000. */
export const MAX_EXACT_COUNT_LIMIT = 1_000_000;
/**
 * Per-queue counts (`overview`, `GET /v1/queues`, the queue-depth gauge):
 * jobs of one queue in one state counted one by one at most, 1,000 (or
 * `exactCountLimit` when lower); above that, the planner's estimate. Lower
 * than `countJobs`'s limit because every queue and state pays up to this
 * many rows at each read, and dashboards and metric scrapes read often.
 */
export const QUEUE_EXACT_COUNT_LIMIT = 1_000;
/**
 * `overview`: the recent window its throughput, failure rates and top
 * errors cover, 15 minutes. Each attempt that ended in it is read with its
 * job, so the cost grows with the attempts in the window: at a million
 * attempts an hour, a whole hour took seconds (docs/operations.md).
 */
export const OVERVIEW_WINDOW_MS = 15 * 60 * 1000;
/** `overview`: the jobs past their lease it lists (it counts them all, up to the exact-count limit). */
export const OVERVIEW_STUCK_JOBS = 5;
/** `overview`: the error messages it lists, most frequent first. */
export const OVERVIEW_TOP_ERRORS = 10;


/** Connections in the pool Conveyor creates from a connection string. */
export const DEFAULT_POOL_SIZE = 10;
/** Pools Conveyor creates: how long opening a connection may take before it fails. */
export const CONNECT_TIMEOUT_MS = 10_000;
/**
 * Pools Conveyor creates: the client-side deadline of every statement, 60 s
 * (0 turns it off). A statement unanswered by then fails with a
 * `DatabaseError` and its connection is discarded: a cut network or a
 * frozen server never holds a caller, a worker's loops or its shutdown
 * for the kernel's TCP timeouts (minutes to hours). Statements a handler
 * sends inside `ctx.transaction` share it; migrations are exempt.
 */
export const DEFAULT_QUERY_TIMEOUT_MS = 60_000;
/**
 * Claims under a queue or tenant cap: the longest one waits for the cap's
 * lock (held for a claim statement's own run, a few ms) before it gives that
 * queue up for the round, logs and counts it. A settings row locked by
 * something else (an open transaction in psql, say) slows the others by
 * this much per round, never stops them.
 */
export const CLAIM_LOCK_TIMEOUT_MS = 2_000;

/** Worker: jobs run at once. */
export const DEFAULT_CONCURRENCY = 10;
/** Worker: how long a claim is owned without renewal. */
export const DEFAULT_LEASE_MS = 60_000;
/** Worker: how often leases are renewed; must be at most a third of the lease. */
export const DEFAULT_HEARTBEAT_MS = 20_000;
/** Worker: the shortest lease accepted (tests use short leases; production should not). */
export const MIN_LEASE_MS = 500;
/** Worker: polling interval when no notification arrives (the fallback to LISTEN/NOTIFY). */
export const DEFAULT_POLL_INTERVAL_MS = 1_000;
/** Worker: how often expired leases are swept (each sweep is jittered by ±25%). */
export const DEFAULT_RECLAIM_INTERVAL_MS = 15_000;
/** Worker: how long shutdown waits for running handlers before aborting them. */
export const DEFAULT_SHUTDOWN_GRACE_MS = 30_000;
/**
 * Worker: after the grace period, how long shutdown spends handing the
 * aborted jobs back and closing its connections before it gives up on them
 * (a dead network): whatever the database does, `stop()` resolves within
 * grace + this. Jobs not handed back by then come back when their leases
 * expire.
 */
export const SHUTDOWN_CLEANUP_MS = 3_000;
/** Worker: most jobs taken in one claim statement. */
export const DEFAULT_CLAIM_BATCH_SIZE = 100;
/**
 * Worker: the largest `claimBatchSize` accepted. A worker over every queue
 * claims with a statement whose plan is made once (sql/claims.ts
 * jobClaimAllQueues), and this is the constant bound that keeps that plan
 * from depending on the claim's size.
 */
export const MAX_CLAIM_BATCH_SIZE = 1_000;
/** Worker: rows handled by one reclaim statement. */
export const RECLAIM_BATCH_SIZE = 500;
/** Worker: back-off after a database error, doubling up to the cap. */
export const ERROR_BACKOFF_MIN_MS = 100;
export const ERROR_BACKOFF_MAX_MS = 5_000;
/**
 * Starting while the database is down (`worker.start()`,
 * `conveyor.waitForDatabase()`, and so `conveyor worker`, `conveyor api` and
 * `conveyor dev`): the wait after the first refused or failed connection,
 * 500 ms. Each later wait doubles, up to `DATABASE_WAIT_MAX_MS`, less up to
 * `DATABASE_WAIT_JITTER` of it at random, so a fleet started together does
 * not retry in step. Pods and services start in any order; a process that
 * exited instead would be restarted in a loop, or not at all.
 */
export const DATABASE_WAIT_MIN_MS = 500;
/** Starting while the database is down: the longest wait between two tries, 10 s. */
export const DATABASE_WAIT_MAX_MS = 10_000;
/** Starting while the database is down: the share of each wait that is random, 0.2. */
export const DATABASE_WAIT_JITTER = 0.2;
/** Worker: how often the `workers` row is refreshed, and when a silent worker counts as gone. */
export const WORKER_HEARTBEAT_MS = 10_000;
export const WORKER_STALE_MS = 60_000;
/** Payloads nest at most this deep; deeper JSON is refused rather than risking Postgres' stack limit. */
export const MAX_PAYLOAD_DEPTH = 100;

/** Progress: largest `ctx.progress()` value accepted, in bytes of its JSON text (16 KiB); it is rewritten often and sent with every job read. */
export const MAX_PROGRESS_BYTES = 16 * 1024;
/** Progress: the shortest time between two progress writes of one attempt; values reported in between coalesce (latest wins). */
export const DEFAULT_PROGRESS_INTERVAL_MS = 500;

/** Durable execution: longest name of a step, sleep, wait, event or event key (255 characters, no control characters). */
export const MAX_STEP_NAME_LENGTH = 255;
/** Durable execution: most steps, sleeps and waits one job may record (1,000); one more fails the job with `StepLimitError`. */
export const MAX_STEPS_PER_JOB = 1_000;
/** Durable execution: largest step result or event payload, in bytes of its JSON text (256 KiB); every later run of the job reads it back. */
export const MAX_STEP_RESULT_BYTES = 256 * 1024;
/** Durable execution: how often a worker queues sleeping jobs whose time has come (1 s): a sleep ends at most this late, plus a claim. */
export const DEFAULT_WAKE_INTERVAL_MS = 1_000;
/** Durable execution: the open-waits gauge (`conveyor_waits_open`) counts up to this many, 100,000, so a scrape reads a bounded number of rows. */
export const OPEN_WAITS_COUNT_LIMIT = 100_000;
/** Durable execution: most sleeping jobs one wake-up statement queues. */
export const WAKE_BATCH_SIZE = 1_000;
/** Durable execution: retries of a step's function before its error fails the attempt (0: the job's own retries alone). */
export const DEFAULT_STEP_RETRIES = 0;
/** Durable execution: the wait for an event with no `timeoutMs` lasts until this date, which stands for "no deadline". */
export const NO_DEADLINE = new Date("9999-12-31T00:00:00Z");
/** Durable execution: events are kept this long (7 days) for waits that have not reached them yet, then pruned. */
export const DEFAULT_EVENT_RETENTION_MS = 7 * 86_400_000;

/** Batch handlers: most jobs in one batch (`batch.maxSize`), 1,000. */
export const MAX_BATCH_SIZE = 1_000;
/** Batch handlers: how long a batch waits for more jobs after its first (`batch.maxWaitMs`), 50 ms. */
export const DEFAULT_BATCH_MAX_WAIT_MS = 50;
/** Batch handlers: the longest `batch.maxWaitMs`, 60 s; the jobs waiting hold their slots and leases meanwhile. */
export const MAX_BATCH_WAIT_MS = 60_000;

/** HTTP API: most jobs in one `POST /v1/jobs/batch` request. */
export const MAX_BATCH_JOBS = 1_000;
/** HTTP API: largest request body accepted (1 MiB); larger ones get 413. */
export const DEFAULT_HTTP_BODY_LIMIT_BYTES = 1024 * 1024;
/**
 * HTTP API: the longest path segment the router takes, 1,536 characters: a
 * 128-character queue name or tenant of 4-byte UTF-8 characters, each byte
 * percent-encoded. Each path parameter is then checked precisely (a UUID, a
 * name); a longer segment gets 414.
 */
export const MAX_HTTP_PATH_SEGMENT_LENGTH = 4 * 3 * 128;
/** HTTP API: a request still unanswered after this long gets 503. */
export const DEFAULT_HTTP_REQUEST_TIMEOUT_MS = 30_000;
/** HTTP API: the `Retry-After` (seconds) of a 503 answered while the database refuses writes (read-only, failing over). */
export const READ_ONLY_RETRY_AFTER_S = 5;
/** HTTP API: port `conveyor api` binds by default, 8080. */
export const DEFAULT_API_PORT = 8080;
/** HTTP API: address `conveyor api` binds by default, 127.0.0.1 (this host only). */
export const DEFAULT_API_HOST = "127.0.0.1";
/** `conveyor dev`: jobs its worker for the example jobs runs at once, 4 (a demo on a laptop, not a production worker). */
export const DEFAULT_DEV_CONCURRENCY = 4;

/** Cron schedules: what happens to ticks missed while no worker ran the schedule (see `CronMissedPolicy`). */
export const DEFAULT_CRON_MISSED_POLICY = "skip";
/** Cron schedules: the time zone a schedule's fields are read in when it names none. */
export const DEFAULT_CRON_TIMEZONE = "UTC";
/** Cron schedules: most missed ticks one `catch-up` pass enqueues (the most recent ones) when no `limit` is given. */
export const DEFAULT_CRON_CATCH_UP_LIMIT = 10;
/** Cron schedules: the largest `catch-up` limit accepted. */
export const MAX_CRON_CATCH_UP_LIMIT = 1_000;
/**
 * Cron schedules: the longest a worker's scheduler sleeps between checks, even
 * when its next tick is further away: so it notices a schedule another
 * worker's start changed, and recovers from a failed pass.
 */
export const CRON_CHECK_INTERVAL_MS = 30_000;
/**
 * Cron schedules: how long after a tick the scheduler wakes for it, so a timer
 * firing a hair early does not find it not yet due by the database clock.
 */
export const CRON_WAKE_SLACK_MS = 5;
/**
 * Cron schedules: when a due schedule was left (another worker holds it mid-pass,
 * or it cannot be read here), how long to wait before looking again.
 */
export const CRON_OVERDUE_RECHECK_MS = 250;
/** Unique jobs: the states in which a job holds its unique key when `unique.states` is not given. */
export const DEFAULT_UNIQUE_STATES: readonly ("queued" | "retrying" | "running")[] = Object.freeze(["queued", "retrying", "running"]);
/** Unique jobs: what an enqueue does when another job holds the key, when `unique.onConflict` is not given. */
export const DEFAULT_UNIQUE_ON_CONFLICT = "keep" as const;
/** Unique keys come from callers; bound them (the database checks the same bound). */
export const MAX_UNIQUE_KEY_LENGTH = 255;
/**
 * Enqueue: rounds of the insert when the job it conflicted with was gone by
 * the time it was read (a rolled-back idempotent insert, a unique-key holder
 * that left its states). Each round needs another such race, so 3 is plenty.
 */
export const ENQUEUE_RACE_ROUNDS = 3;
/** Retention: a kind's succeeded jobs are kept in history (`defineJob({ retention: { keepSucceeded } })`). */
export const DEFAULT_KEEP_SUCCEEDED = true;
/** Retention: succeeded and cancelled jobs (with their executions) are deleted this long after they finished: 7 days. */
export const DEFAULT_RETENTION_FINISHED_MS = 7 * 24 * 60 * 60 * 1000;
/**
 * Days ahead (UTC) for which job_history always has a partition: migrate
 * and every worker's upkeep make the missing ones. A job that ends past
 * them still ends (job_history_default takes it), and is pruned row by row.
 */
export const HISTORY_DAYS_AHEAD = 7;
/**
 * How often each worker makes the day partitions of job_history that are
 * missing, 1 hour (each wait is jittered by ±25%), besides once as it
 * starts. A run with nothing to make is one statement of about a
 * millisecond; with `HISTORY_DAYS_AHEAD` (7) days made ahead, any worker
 * running within a week keeps every day, so the interval is not an option.
 */
export const HISTORY_UPKEEP_INTERVAL_MS = 60 * 60 * 1000;
/**
 * Jobs per batch when migrate copies history ahead of storing jobs by state
 * (migrations 027 and 028): each batch is a transaction of its own that
 * share-locks its jobs, so a worker ending one of them waits for at most
 * one batch.
 */
export const HISTORY_COPY_BATCH_SIZE = 5_000;
/**
 * Times a statement on Conveyor's pool is run again after the server
 * aborted it for a serialization conflict or a deadlock (store/run-query.ts).
 */
export const STATEMENT_CONFLICT_RETRIES = 5;
/** Lock wait, in ms, of the detach that drops a day of history; a prune that cannot get the lock in time leaves the day to the next one. */
export const HISTORY_DETACH_LOCK_TIMEOUT_MS = 200;
/**
 * Lock wait, in ms, of each lock job_history_extend takes: another extender's
 * (it then leaves the days to that one), and those attaching a day takes on
 * job_history and its default partition, which a read scanning the default
 * partition waits behind. A run that cannot get one in time leaves the rest
 * to the next run.
 */
export const HISTORY_EXTEND_LOCK_TIMEOUT_MS = 200;
/** Retention: dead letters (with their dead jobs and executions) are deleted this long after they died: 30 days. */
export const DEFAULT_RETENTION_DEAD_LETTER_MS = 30 * 24 * 60 * 60 * 1000;
/** Retention: the longest age accepted (10 years); to keep rows longer, turn retention off. */
export const MAX_RETENTION_AGE_MS = 10 * 365 * 24 * 60 * 60 * 1000;
/** Retention: how often each worker prunes, 5 minutes (each wait is jittered by ±25%). */
export const DEFAULT_RETENTION_INTERVAL_MS = 5 * 60 * 1000;
/**
 * Retention: a worker's first prune comes this soon after it starts (2 s, ±25%), so short-lived
 * workers prune too. A fleet starting together prunes together; SKIP LOCKED shares the rows out.
 */
export const RETENTION_FIRST_SWEEP_MAX_MS = 2_000;
/** Retention: rows deleted by one statement (1,000), so no prune holds many row locks for long. */
export const DEFAULT_RETENTION_BATCH_SIZE = 1_000;
/** Retention: the largest batch accepted. */
export const MAX_RETENTION_BATCH_SIZE = 10_000;
/** Retention: pause between two batches of one prune (50 ms), to leave the database room for the hot path. */
export const RETENTION_BATCH_PAUSE_MS = 50;

// --- Bulk actions ---

/**
 * Bulk actions: jobs changed by one batch, each batch one short
 * transaction (500), so no batch holds many row locks for long.
 */
export const BULK_ACTION_BATCH_SIZE = 500;
/**
 * Bulk actions: the most rows of the primary key one batch reads (5,000)
 * when it walks jobs in states without an index in id order (all but
 * `dead`), so a batch costs the same however sparse the matching jobs are.
 */
export const BULK_ACTION_WINDOW_ROWS = 5_000;
/** Bulk actions: the shortest pause between two batches of one operation (50 ms). */
export const BULK_ACTION_BATCH_PAUSE_MS = 50;
/**
 * Bulk actions: the pause after a batch is at least this many times as long
 * as the batch took (4), so an operation keeps the database busy at most a
 * fifth of the time, whatever the load: on a database that workers keep
 * busy, the batches slow down and the workers keep claiming.
 */
export const BULK_ACTION_PAUSE_PER_BATCH_TIME = 4;
/**
 * Bulk actions: the longest a batch waits for a row lock (200 ms), e.g. a
 * job a worker is completing. The batch then rolls back and is tried again
 * after a pause: a bulk action always gives way to the hot path.
 */
export const BULK_ACTION_LOCK_TIMEOUT_MS = 200;
/** Bulk actions: failed tries of one batch in a row (lock waits, a lost connection) before the operation fails (20, about a minute of backoff). */
export const BULK_ACTION_MAX_BATCH_TRIES = 20;
/**
 * Bulk actions: how long an operation stays its process's without a batch
 * (30 s). Each batch renews it; once it lapses (the process died), any
 * process running the resume sweep takes the operation over.
 */
export const BULK_ACTION_LEASE_MS = 30_000;
/** Bulk actions: how often the HTTP API looks for operations whose owner is gone and resumes them (15 s, ±25%). */
export const BULK_ACTION_SWEEP_INTERVAL_MS = 15_000;
/** Bulk actions: the most operations one resume sweep takes over (10). */
export const BULK_ACTION_SWEEP_LIMIT = 10;
/** Bulk actions: how often `bulkActions.run` reads an operation another live process runs (1 s). */
export const BULK_ACTION_WATCH_INTERVAL_MS = 1_000;
/**
 * Bulk actions: how long the count of the jobs a filter covers may take
 * (1 s) before the planner's estimate is used instead.
 */
export const BULK_ACTION_COUNT_TIMEOUT_MS = 1_000;
/** Bulk actions: the longest `requestedBy` accepted (256 characters). */
export const MAX_BULK_ACTION_REQUESTED_BY_LENGTH = 256;
/** Queue and tenant limits: the largest concurrency cap accepted (a queue or tenant). */
export const MAX_CONCURRENCY_LIMIT = 1_000_000;
/** Queue rate limit: the most claims per window accepted. */
export const MAX_RATE_LIMIT_COUNT = 1_000_000;
/** Queue rate limit: the longest window accepted (one day; the column is an int of ms). */
export const MAX_RATE_INTERVAL_MS = 24 * 60 * 60 * 1000;
/**
 * How often a client re-measures the offset between its clock and the
 * database server's (one tiny query), which its ids are made from
 * (store/database-clock.ts): every minute.
 */
export const CLOCK_RESYNC_MS = 60_000;
/** Worker: how often it re-reads which queues are limited and whether tenants have caps (one small query). */
export const CLAIM_RESTRICTIONS_REFRESH_MS = 1_000;
/**
 * Key-limited claims: the fewest keys one claim walks (16). It walks one
 * key per KEY_SHARE_PER_CLAIM slots it claims, at least this many; each key
 * walked is one index probe and one advisory lock.
 */
export const MIN_KEYS_PER_CLAIM = 16;
/**
 * Key-limited claims: the most keys one claim walks (64). Each key walked
 * holds an advisory lock until the claim commits, and advisory locks share
 * the server's lock table (max_locks_per_transaction × connections): 64
 * per claim stays far inside it however many workers claim at once.
 */
export const MAX_KEYS_PER_CLAIM = 64;
/**
 * Key-limited claims: slots per key walked (8); each key gives at most its
 * even share of the claim. A claim of 200 on a fresh table of 200,000 jobs
 * over 10,000 keys took 9.3 ms walking 25 keys against 13.9 ms walking 50
 * (the ordinary claim: 9.6-11 ms).
 */
export const KEY_SHARE_PER_CLAIM = 8;
/** Key-limited claims: the most claims of one queue in one claim round (4), walking on while the round is short. */
export const KEY_CLAIMS_PER_ROUND = 4;
/** `keyLimits.top`: keys listed by default (10). */
export const DEFAULT_TOP_KEYS = 10;
/** `keyLimits.top`: the most keys listed (100). */
export const MAX_TOP_KEYS = 100;
/** Metrics: keys held back by their limits given a series of their own, per queue (10; the rest are only counted). */
export const KEY_METRICS_TOP = 10;
/**
 * Worker: fewest fresh execution ids a claim sends after a claim that found
 * fewer ready jobs than it asked for: it sends twice as many as that one took
 * (up to its limit), and makes its own for any row beyond them. After a claim
 * that got all it asked for, the next sends one per row of its limit. Ids
 * are made on an idle worker's path from enqueue to handler, so it makes
 * about as many as it will use.
 */
export const CLAIM_MIN_FRESH_IDS = 16;
/**
 * Claims: how long a worker claims after its cursor (past the last job it
 * claimed, store/sql/claims.ts) before it claims from the head of the ready
 * index again, 250 ms, or CLAIM_HEAD_COST_FACTOR times what its last claim
 * from the head took, if longer: how long a job that lands before the
 * cursor (a higher priority, a retry due earlier) can wait behind later ones.
 */
export const CLAIM_CURSOR_RESET_MS = 250;
/** Claims: claims from the head of the ready index take at most about 1/100 of a worker's claiming time, however slow a held-back VACUUM makes them. */
export const CLAIM_HEAD_COST_FACTOR = 100;
/** Worker: claim order across tenants; "off" is the plain priority/run_at order (the fast path). */
export const DEFAULT_FAIRNESS = "off";

/**
 * Most jobs one insert statement of `enqueueMany` carries; a larger call is
 * inserted in chunks of this size inside one transaction. Much larger
 * statements are slower: the notify trigger's transition table of every new
 * row outgrows work_mem and spills to temporary files. Chunks also let the
 * client validate one while the server inserts another.
 */
export const ENQUEUE_CHUNK_ROWS = 5_000;

/**
 * `enqueueMany` of at least this many jobs, none with an idempotency key or
 * a unique key, and not in a caller's transaction, writes them by COPY
 * (JobStore.jobCopyMany), validated COPY_CHUNK_ROWS at a time while the
 * server inserts the chunks before. Below this size the server's insert,
 * not the client's validation, is the longer part, so the overlap has
 * little to hide and COPY's two extra round trips cost as much as it saves
 * (docs/performance.md has the measurements).
 */
export const COPY_MIN_ROWS = 2_000;
/** Jobs validated and sent per step of a COPY (see COPY_MIN_ROWS). */
export const COPY_CHUNK_ROWS = 250;

// --- Dependencies, flows and batches ---

/** The policy of a dependency that names none: `"fail"` (the dependent is dead-lettered when it ends other than succeeded). */
export const DEFAULT_DEPENDENCY_POLICY = "fail" as const;

/** The most jobs in one flow or batch: 100,000. */
export const MAX_FLOW_JOBS = 100_000;

/** The most dependencies of one job: 100,000. */
export const MAX_DEPENDENCIES = 100_000;

// --- Test helpers (conveyor-jobs/testing) ---

/** Test helpers: how long `drain()` runs before it gives up, 30 s. */
export const DEFAULT_DRAIN_TIMEOUT_MS = 30_000;
/** Test helpers: jobs the worker of `drain()` runs at once, 10. */
export const DRAIN_CONCURRENCY = 10;
/** Test helpers: the poll interval of the worker of `drain()`, 10 ms, so a drain notices jobs made due at once. */
export const DRAIN_POLL_INTERVAL_MS = 10;
/**
 * Test helpers: `drain()` waits for sleeping jobs due within this long (a
 * `sleep`, or a `waitForEvent` deadline), 1 s, and runs them when their
 * time comes; a job that sleeps longer stays sleeping until `advanceTime`
 * brings it closer.
 */
export const DRAIN_SLEEP_HORIZON_MS = 1_000;
