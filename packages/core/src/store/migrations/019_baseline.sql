-- The schema's tables and indexes as of migration 19: what a new database
-- starts from. `{{schema}}` is replaced by the quoted schema name. A
-- database migrated before this baseline already has migration 19 and never
-- runs this file. Functions, views and triggers are not here: each lives in
-- a file of its own under src/store/routines/, installed by migrate after
-- the migrations. The whole current schema is src/store/schema.sql.
--
-- CHECK constraints that list values use array literals
-- ('{a,b}'::text[]): PostgreSQL keeps a table's CHECK expressions as trees
-- that every INSERT and UPDATE prepares again, and an array literal is one
-- constant where `IN (…)` stores one per value.

-- Jobs: one row per job for its whole life, finished ones included until
-- retention prunes them. The running attempt lives on the row
-- (current_execution_id, attempts, locked_by, started_at, lease_expires_at);
-- its job_executions row is written whole when it ends.
CREATE TABLE {{schema}}.jobs (
  id                    uuid        PRIMARY KEY,
  tenant                text        NOT NULL,
  queue                 text        NOT NULL,
  kind                  text        NOT NULL,
  payload               jsonb       NOT NULL,
  priority              smallint    NOT NULL DEFAULT 0,
  status                text        NOT NULL DEFAULT 'queued',
  attempts              integer     NOT NULL DEFAULT 0,
  max_attempts          integer     NOT NULL,
  run_at                timestamptz NOT NULL DEFAULT now(),
  locked_by             text,
  current_execution_id  uuid,
  lease_expires_at      timestamptz,
  cancel_requested      boolean     NOT NULL DEFAULT false,
  idempotency_key       text,
  last_error            jsonb,
  result                jsonb,
  created_at            timestamptz NOT NULL DEFAULT now(),
  updated_at            timestamptz NOT NULL DEFAULT now(),
  started_at            timestamptz,
  finished_at           timestamptz,
  -- Unique jobs: at most one job per (tenant, unique_key) among the jobs
  -- still in unique_states. The partial unique index settles concurrent
  -- enqueues; the trigger jobs_release_unique_key releases the key the
  -- moment a job leaves its states, on every path.
  unique_key            text,
  unique_states         text[],
  -- The latest value a handler reported with ctx.progress(), and when it was
  -- stored (database clock); both stay after the job ends.
  progress              jsonb,
  progress_updated_at   timestamptz,
  -- True once another job depends on this one; the release trigger's WHEN
  -- reads it, so ending an ordinary job costs one boolean test.
  has_dependents        boolean     NOT NULL DEFAULT false,
  -- The W3C trace context captured at enqueue (docs/tracing.md):
  -- {"traceparent": …, "tracestate": …}. Read by primary key only.
  trace_context         jsonb,
  -- The key of limits per key (a customer, a host), set at enqueue.
  limit_key             text,
  CONSTRAINT jobs_attempts_nonnegative CHECK (attempts >= 0),
  CONSTRAINT jobs_attempts_within_max CHECK (attempts <= max_attempts),
  CONSTRAINT jobs_finished_iff_terminal CHECK (
    (status = ANY ('{succeeded,cancelled,dead}'::text[])) = (finished_at IS NOT NULL)),
  CONSTRAINT jobs_limit_key_bounded CHECK (limit_key IS NULL OR length(limit_key) BETWEEN 1 AND 256),
  CONSTRAINT jobs_max_attempts_positive CHECK (max_attempts >= 1),
  CONSTRAINT jobs_names_bounded CHECK (
    length(tenant) BETWEEN 1 AND 128 AND length(queue) BETWEEN 1 AND 128 AND length(kind) BETWEEN 1 AND 128),
  CONSTRAINT jobs_priority_range CHECK (priority BETWEEN -1000 AND 1000),
  -- The bound the library and the HTTP API check (core/defaults.ts
  -- MIN_RUN_AT_MS, MAX_RUN_AT_MS): every stored run time is one a JavaScript
  -- Date holds and ISO 8601 writes with four digits.
  CONSTRAINT jobs_run_at_bounded CHECK (
    run_at >= '2000-01-01 00:00:00+00'::timestamptz AND run_at < '10000-01-01 00:00:00+00'::timestamptz),
  -- A running job always has an owner, an execution and a lease; nothing else has any of them.
  CONSTRAINT jobs_running_owned CHECK (
    num_nonnulls(locked_by, current_execution_id, lease_expires_at) = CASE status WHEN 'running' THEN 3 ELSE 0 END),
  CONSTRAINT jobs_status_valid CHECK (
    status = ANY ('{waiting,queued,running,retrying,succeeded,cancelled,dead}'::text[])),
  -- Every job starts queued, so a job that holds a key must hold it while
  -- queued (which also makes the list non-empty).
  CONSTRAINT jobs_unique_states_valid CHECK (
    unique_states IS NULL
    OR (unique_states <@ '{queued,retrying,running}'::text[] AND 'queued' = ANY (unique_states))),
  CONSTRAINT jobs_unique_key_bounded CHECK (unique_key IS NULL OR length(unique_key) BETWEEN 1 AND 255),
  -- A key is held only by a job in one of its states.
  CONSTRAINT jobs_unique_key_held_in_state CHECK (
    unique_key IS NULL OR (unique_states IS NOT NULL AND status = ANY (unique_states)))
);

-- Every index on jobs but the primary key is partial on the states it
-- serves, so the claim's indexes stay as small as the backlog however many
-- finished jobs are kept. (An index by tenant for the tenant-fair claim is
-- built on demand: src/store/sql/tenant-index.ts.)
-- The claim, all queues, in claim order.
CREATE INDEX jobs_ready_idx ON {{schema}}.jobs (priority, run_at, id)
  WHERE status IN ('queued', 'retrying');
-- The claim for workers bound to named queues.
CREATE INDEX jobs_ready_by_queue_idx ON {{schema}}.jobs (queue, priority, run_at, id)
  WHERE status IN ('queued', 'retrying');
-- The key claim walks the distinct keys with ready jobs of one queue (one
-- probe per key); an enqueue without a key writes no entry here.
CREATE INDEX jobs_ready_by_limit_key_idx ON {{schema}}.jobs (queue, limit_key, priority, run_at, id)
  WHERE status IN ('queued', 'retrying') AND limit_key IS NOT NULL;
-- The reclaim sweep (running jobs by lease expiry), and running counts per
-- queue or tenant (at most the workers' total concurrency rows).
CREATE INDEX jobs_running_lease_idx ON {{schema}}.jobs (lease_expires_at)
  WHERE status = 'running';
-- A key's running jobs.
CREATE INDEX jobs_running_by_limit_key_idx ON {{schema}}.jobs (queue, limit_key)
  WHERE status = 'running' AND limit_key IS NOT NULL;
-- Jobs waiting on dependencies, by queue, for the depth gauge and listings.
CREATE INDEX jobs_waiting_idx ON {{schema}}.jobs (queue) WHERE status = 'waiting';
-- Retention: exactly the rows a prune may delete, oldest first.
CREATE INDEX jobs_finished_prune_idx ON {{schema}}.jobs (finished_at)
  WHERE status IN ('succeeded', 'cancelled');
-- Dead jobs in id order (a bulk retry or purge walks only these), and by
-- queue (the dead list, the depth gauge). Jobs die rarely: claims and
-- completions never write an entry in them.
CREATE INDEX jobs_dead_idx ON {{schema}}.jobs (id) WHERE status = 'dead';
CREATE INDEX jobs_dead_by_queue_idx ON {{schema}}.jobs (queue, id) WHERE status = 'dead';
-- Idempotency keys and unique keys are unique per tenant; the index, not a
-- check-then-insert, settles races.
CREATE UNIQUE INDEX jobs_idempotency_key_idx ON {{schema}}.jobs (tenant, idempotency_key)
  WHERE idempotency_key IS NOT NULL;
CREATE UNIQUE INDEX jobs_unique_key_idx ON {{schema}}.jobs (tenant, unique_key)
  WHERE unique_key IS NOT NULL;

-- Statistics of the columns searches and counts combine, so that a count
-- above the exact limit is estimated from the combination's own frequency.
-- They cost only ANALYZE time, never a write.
CREATE STATISTICS {{schema}}.jobs_queue_status_stats (mcv) ON queue, status FROM {{schema}}.jobs;
CREATE STATISTICS {{schema}}.jobs_kind_status_stats (mcv) ON kind, status FROM {{schema}}.jobs;
CREATE STATISTICS {{schema}}.jobs_tenant_queue_status_stats (mcv) ON tenant, queue, status FROM {{schema}}.jobs;

-- One row per ended attempt, inserted whole by the statement that ends it
-- and never updated; deleted with its job by the trigger
-- jobs_delete_executions (no foreign key: nothing inserts an execution but
-- the fenced statement that has just updated its job row).
CREATE TABLE {{schema}}.job_executions (
  id           uuid        PRIMARY KEY,
  job_id       uuid        NOT NULL,
  attempt      integer     NOT NULL,
  worker_id    text        NOT NULL,
  started_at   timestamptz NOT NULL DEFAULT now(),
  finished_at  timestamptz,
  outcome      text        NOT NULL DEFAULT 'running',
  error        jsonb,
  CONSTRAINT job_executions_attempt_positive CHECK (attempt >= 1),
  CONSTRAINT job_executions_finished_iff_done CHECK ((outcome = 'running') = (finished_at IS NULL)),
  CONSTRAINT job_executions_outcome_valid CHECK (outcome IN (
    'running', 'succeeded', 'failed', 'timeout', 'retry_after', 'cancelled', 'lease_expired', 'interrupted')),
  CONSTRAINT job_executions_ended CHECK (finished_at IS NOT NULL)
) WITH (fillfactor = 100);
CREATE INDEX job_executions_job_idx ON {{schema}}.job_executions (job_id, started_at);

-- The dead-letter queue: a dead job's payload, last error and whole history,
-- written in the statement that moves the job to `dead`.
CREATE TABLE {{schema}}.dead_letter_jobs (
  id            uuid        PRIMARY KEY,
  job_id        uuid        NOT NULL UNIQUE REFERENCES {{schema}}.jobs (id) ON DELETE CASCADE,
  tenant        text        NOT NULL,
  queue         text        NOT NULL,
  kind          text        NOT NULL,
  payload       jsonb       NOT NULL,
  attempts      integer     NOT NULL,
  max_attempts  integer     NOT NULL,
  reason        text        NOT NULL,
  last_error    jsonb,
  history       jsonb       NOT NULL,
  dead_at       timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT dead_letter_jobs_reason_valid CHECK (
    reason = ANY ('{attempts_exhausted,permanent_error,dependency_failed}'::text[]))
);
CREATE INDEX dead_letter_jobs_tenant_idx ON {{schema}}.dead_letter_jobs (tenant, id);
-- Retention of dead letters, oldest first.
CREATE INDEX dead_letter_jobs_dead_at_idx ON {{schema}}.dead_letter_jobs (dead_at);

-- Live workers, each renewing last_seen_at.
CREATE TABLE {{schema}}.workers (
  id            text        PRIMARY KEY,
  hostname      text        NOT NULL,
  pid           integer     NOT NULL,
  queues        text[],
  kinds         text[]      NOT NULL,
  concurrency   integer     NOT NULL,
  started_at    timestamptz NOT NULL DEFAULT now(),
  last_seen_at  timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT workers_concurrency_positive CHECK (concurrency >= 1)
);

-- API keys of the HTTP API, stored hashed.
CREATE TABLE {{schema}}.api_keys (
  id            uuid        PRIMARY KEY,
  name          text,
  tenant        text        NOT NULL,
  is_admin      boolean     NOT NULL DEFAULT false,
  key_hash      bytea       NOT NULL UNIQUE,
  key_prefix    text        NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now(),
  last_used_at  timestamptz,
  revoked_at    timestamptz
);

-- Cron schedules, shared by every worker. A worker enqueues a schedule's due
-- ticks and moves next_tick_at past them in one transaction, holding the row
-- (FOR UPDATE SKIP LOCKED) and updating it only if next_tick_at is still
-- what it read: each tick is enqueued once however many workers run.
CREATE TABLE {{schema}}.cron_schedules (
  name            text        PRIMARY KEY,
  kind            text        NOT NULL,
  cron            text        NOT NULL,
  timezone        text        NOT NULL,
  tenant          text        NOT NULL,
  queue           text        NOT NULL,
  priority        smallint    NOT NULL,
  -- The payload of every tick's job, as the kind's schema parsed it.
  payload         jsonb       NOT NULL,
  missed_policy   text        NOT NULL,
  catch_up_limit  integer     NOT NULL,
  -- The first tick not yet handled; null when the expression never fires again.
  next_tick_at    timestamptz,
  -- The newest tick enqueued; null until the first.
  last_tick_at    timestamptz,
  created_at      timestamptz NOT NULL DEFAULT now(),
  -- When the definition (cron, time zone, payload…) last changed.
  updated_at      timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT cron_schedules_policy_valid CHECK (missed_policy IN ('skip', 'catch-up')),
  CONSTRAINT cron_schedules_limit_positive CHECK (catch_up_limit >= 1),
  CONSTRAINT cron_schedules_priority_range CHECK (priority BETWEEN -1000 AND 1000),
  CONSTRAINT cron_schedules_names_bounded CHECK (
    length(name) BETWEEN 1 AND 128 AND length(kind) BETWEEN 1 AND 128 AND length(tenant) BETWEEN 1 AND 128
    AND length(queue) BETWEEN 1 AND 128)
);

-- Pause and limits per queue. A queue with no row here, or a row with
-- nothing set, is claimed by the worker's own claim; paused and limited
-- queues are left to the claim functions.
CREATE TABLE {{schema}}.queue_settings (
  name               text        PRIMARY KEY,
  paused             boolean     NOT NULL DEFAULT false,
  -- Most jobs of this queue running at once, across every worker.
  concurrency_limit  integer,
  -- Fixed window: at most rate_limit claims per window of rate_interval_ms,
  -- the window starting at the first claim after the previous one ended.
  rate_limit         integer,
  rate_interval_ms   integer,
  window_started_at  timestamptz,
  window_count       integer     NOT NULL DEFAULT 0,
  updated_at         timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT queue_settings_name_bounded CHECK (length(name) BETWEEN 1 AND 128),
  CONSTRAINT queue_settings_concurrency_positive CHECK (concurrency_limit IS NULL OR concurrency_limit >= 1),
  CONSTRAINT queue_settings_rate_complete CHECK ((rate_limit IS NULL) = (rate_interval_ms IS NULL)),
  CONSTRAINT queue_settings_rate_positive CHECK (rate_limit IS NULL OR (rate_limit >= 1 AND rate_interval_ms >= 1)),
  CONSTRAINT queue_settings_window_count_nonnegative CHECK (window_count >= 0)
);

-- Caps per tenant.
CREATE TABLE {{schema}}.tenant_settings (
  tenant             text        PRIMARY KEY,
  -- Most jobs of this tenant running at once, across every worker.
  concurrency_limit  integer,
  updated_at         timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT tenant_settings_tenant_bounded CHECK (length(tenant) BETWEEN 1 AND 128),
  CONSTRAINT tenant_settings_concurrency_positive CHECK (concurrency_limit IS NULL OR concurrency_limit >= 1)
);

-- Limits per key: per queue, a default for every key (limit_key '') and
-- overrides for single keys. A queue is key-limited exactly when it has the
-- '' row. Running jobs per key are counted from the jobs rows themselves,
-- never kept in a counter.
CREATE TABLE {{schema}}.key_limits (
  queue              text        NOT NULL,
  -- '' : the default for every key of the queue (keys are never empty).
  limit_key          text        NOT NULL,
  -- Most jobs of one key running at once, across every worker.
  concurrency_limit  integer,
  -- Fixed window per key: at most rate_limit starts per rate_interval_ms.
  rate_limit         integer,
  rate_interval_ms   integer,
  updated_at         timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (queue, limit_key),
  CONSTRAINT key_limits_queue_bounded CHECK (length(queue) BETWEEN 1 AND 128),
  CONSTRAINT key_limits_key_bounded CHECK (length(limit_key) <= 256),
  CONSTRAINT key_limits_concurrency_positive CHECK (concurrency_limit IS NULL OR concurrency_limit >= 1),
  CONSTRAINT key_limits_rate_complete CHECK ((rate_limit IS NULL) = (rate_interval_ms IS NULL)),
  CONSTRAINT key_limits_rate_positive CHECK (rate_limit IS NULL OR (rate_limit >= 1 AND rate_interval_ms >= 1))
);
-- The key-limited queues, read by every claim (one InitPlan): the default
-- rows only, however many keys are overridden.
CREATE INDEX key_limits_queues_idx ON {{schema}}.key_limits (queue) WHERE limit_key = '';

-- The rate window of each (queue, key) with a rate limit, written by the key
-- claim under the key's lock.
CREATE TABLE {{schema}}.key_limit_state (
  queue              text        NOT NULL,
  limit_key          text        NOT NULL,
  window_started_at  timestamptz,
  window_count       integer     NOT NULL DEFAULT 0,
  PRIMARY KEY (queue, limit_key),
  CONSTRAINT key_limit_state_window_count_nonnegative CHECK (window_count >= 0)
);

-- A flow: jobs enqueued together as a graph (kind `flow`), or a batch of
-- jobs with a callback that runs once every member has ended (kind `batch`).
CREATE TABLE {{schema}}.flows (
  id               uuid        PRIMARY KEY,
  tenant           text        NOT NULL,
  kind             text        NOT NULL,
  name             text,
  idempotency_key  text,
  -- A digest of what was asked, so a repeated key with a different request is refused.
  request_hash     text        NOT NULL,
  callback_job_id  uuid,
  created_at       timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT flows_kind_valid CHECK (kind = ANY ('{flow,batch}'::text[])),
  CONSTRAINT flows_name_bounded CHECK (name IS NULL OR length(name) BETWEEN 1 AND 255),
  CONSTRAINT flows_callback_iff_batch CHECK ((kind = 'batch') = (callback_job_id IS NOT NULL))
);
CREATE UNIQUE INDEX flows_idempotency_key_idx ON {{schema}}.flows (tenant, idempotency_key)
  WHERE idempotency_key IS NOT NULL;
CREATE INDEX flows_tenant_idx ON {{schema}}.flows (tenant, id);
-- Retention finds old flows oldest first.
CREATE INDEX flows_created_idx ON {{schema}}.flows (created_at);

-- The jobs of a flow, each under the name (node) the flow gave it.
CREATE TABLE {{schema}}.flow_jobs (
  job_id   uuid PRIMARY KEY,
  flow_id  uuid NOT NULL,
  node     text NOT NULL,
  CONSTRAINT flow_jobs_node_bounded CHECK (length(node) BETWEEN 1 AND 255)
);
CREATE UNIQUE INDEX flow_jobs_flow_node_idx ON {{schema}}.flow_jobs (flow_id, node);

-- Job dependencies: job_id waits for depends_on. The policy says what a
-- dependency that ends other than succeeded does to the dependent: `fail`
-- (dead-lettered), `cancel` (cancelled) or `run` (runs anyway).
CREATE TABLE {{schema}}.job_dependencies (
  depends_on  uuid NOT NULL,
  job_id      uuid NOT NULL,
  on_failure  text NOT NULL,
  PRIMARY KEY (depends_on, job_id),
  CONSTRAINT job_dependencies_policy_valid CHECK (on_failure = ANY ('{fail,cancel,run}'::text[])),
  CONSTRAINT job_dependencies_not_self CHECK (depends_on <> job_id)
);
CREATE INDEX job_dependencies_job_idx ON {{schema}}.job_dependencies (job_id, depends_on);

-- Per dependent, its dependencies' counts, changed only in the transaction
-- that moves a dependency into or out of an ending state, at its commit
-- (the routines jobs_release_dependents and jobs_release_recorded).
CREATE TABLE {{schema}}.job_dependency_state (
  job_id               uuid    PRIMARY KEY,
  -- Dependencies that have not ended.
  pending              integer NOT NULL,
  -- Dependencies that ended without success.
  failed               integer NOT NULL DEFAULT 0,
  -- Of those, the ones whose policy is fail or cancel.
  blocking             integer NOT NULL DEFAULT 0,
  -- One of the blocking dependencies (null when none blocks), named in the
  -- job's error; its edge's policy decides between dead and cancelled.
  blocker              uuid,
  -- `all`: release by the edges' policies. `any_failed`: once every
  -- dependency has ended, run only if one of them failed (a batch's
  -- on-failure callback), else cancel.
  run_if               text    NOT NULL DEFAULT 'all',
  -- The job was ended (dead or cancelled) by its dependencies, not by a
  -- run of its own or a cancel: a requeue of a dependency re-arms it.
  ended_by_dependency  boolean NOT NULL DEFAULT false,
  CONSTRAINT job_dependency_state_counts_valid CHECK (
    pending >= 0 AND failed >= 0 AND blocking >= 0 AND blocking <= failed AND (blocking = 0) = (blocker IS NULL)),
  CONSTRAINT job_dependency_state_run_if_valid CHECK (run_if = ANY ('{all,any_failed}'::text[]))
);

-- Bulk actions: one change (retry, cancel, purge, set a priority, move to a
-- queue) applied on the server to every job a filter selects, in short
-- batches (src/store/bulk-action-store.ts). One row per operation, and it is
-- the record: who asked, when, with what filter, and how many jobs it
-- touched. Retention never deletes these rows. last_job_id is the walk's
-- keyset cursor, advanced in the same transaction as the batch that got
-- there; a batch writes only while its process owns the operation (owner,
-- renewed lease), and a lapsed lease lets any process take the walk over.
CREATE TABLE {{schema}}.bulk_actions (
  id                uuid        PRIMARY KEY,
  -- The tenant whose jobs it acts on; null: every tenant (admin).
  tenant            text,
  action            text        NOT NULL,
  -- The filter as given (times as ISO 8601 text), for the record and for a resumed walk.
  filter            jsonb       NOT NULL,
  -- set_priority's new priority; move's queue.
  priority          smallint,
  queue             text,
  status            text        NOT NULL DEFAULT 'running',
  -- An API key id, `cli:<user>@<host>`, or what a library caller gave.
  requested_by      text,
  -- Jobs the filter covered when it started (a planner's estimate on large tables).
  total             bigint,
  touched           bigint      NOT NULL DEFAULT 0,
  -- The job states the walk touches: the action's, narrowed by the filter
  -- and, when the jobs could be counted at the start, to those with any.
  states            text[]      NOT NULL,
  -- The last job id the walk has passed; null before the first.
  last_job_id       uuid,
  -- The last matching job id at the start; the walk ends there. Null: at
  -- the end of the table.
  walk_until        uuid,
  cancel_requested  boolean     NOT NULL DEFAULT false,
  -- The process running the walk, while its lease lasts.
  owner             text,
  lease_expires_at  timestamptz,
  error             text,
  created_at        timestamptz NOT NULL DEFAULT now(),
  updated_at        timestamptz NOT NULL DEFAULT now(),
  finished_at       timestamptz,
  CONSTRAINT bulk_actions_action_valid CHECK (action = ANY ('{retry,cancel,purge,set_priority,move}'::text[])),
  CONSTRAINT bulk_actions_status_valid CHECK (status = ANY ('{running,succeeded,cancelled,failed}'::text[])),
  CONSTRAINT bulk_actions_finished_iff_ended CHECK ((status = 'running') = (finished_at IS NULL)),
  CONSTRAINT bulk_actions_error_iff_failed CHECK ((status = 'failed') = (error IS NOT NULL)),
  CONSTRAINT bulk_actions_priority_for_set_priority CHECK (
    (action = 'set_priority') = (priority IS NOT NULL) AND (priority IS NULL OR priority BETWEEN -1000 AND 1000)),
  CONSTRAINT bulk_actions_queue_for_move CHECK (
    (action = 'move') = (queue IS NOT NULL) AND (queue IS NULL OR length(queue) BETWEEN 1 AND 128)),
  -- Owned only while running, and never without a lease.
  CONSTRAINT bulk_actions_owner_leased CHECK (
    num_nonnulls(owner, lease_expires_at) = 0 OR (num_nonnulls(owner, lease_expires_at) = 2 AND status = 'running')),
  CONSTRAINT bulk_actions_states_valid CHECK (states <@ '{waiting,queued,running,retrying,succeeded,cancelled,dead}'::text[]),
  CONSTRAINT bulk_actions_counts_valid CHECK (touched >= 0 AND (total IS NULL OR total >= 0)),
  CONSTRAINT bulk_actions_names_bounded CHECK (
    (tenant IS NULL OR length(tenant) BETWEEN 1 AND 128) AND (requested_by IS NULL OR length(requested_by) BETWEEN 1 AND 256))
);
-- A tenant's operations, newest first.
CREATE INDEX bulk_actions_tenant_idx ON {{schema}}.bulk_actions (tenant, id);
-- The resume sweep: running operations by lease.
CREATE INDEX bulk_actions_running_idx ON {{schema}}.bulk_actions (lease_expires_at) WHERE status = 'running';
