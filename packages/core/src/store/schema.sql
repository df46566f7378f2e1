-- The current schema, as a freshly migrated database has it (test/schema-file.test.ts
-- checks it). Generated: `npx vitest run test/schema-file.test.ts -u` rewrites it.
-- Migrations: src/store/migrations/. Functions, views, triggers: src/store/routines/.

CREATE TABLE conveyor.api_keys (
  id uuid NOT NULL,
  name text,
  tenant text NOT NULL,
  is_admin boolean NOT NULL DEFAULT false,
  key_hash bytea NOT NULL,
  key_prefix text NOT NULL,
  created_at timestamp with time zone NOT NULL DEFAULT now(),
  last_used_at timestamp with time zone,
  revoked_at timestamp with time zone,
  CONSTRAINT api_keys_key_hash_key UNIQUE (key_hash),
  CONSTRAINT api_keys_pkey PRIMARY KEY (id)
);

CREATE TABLE conveyor.bulk_actions (
  id uuid NOT NULL,
  tenant text,
  action text NOT NULL,
  filter jsonb NOT NULL,
  priority smallint,
  queue text,
  status text NOT NULL DEFAULT 'running'::text,
  requested_by text,
  total bigint,
  touched bigint NOT NULL DEFAULT 0,
  states text[] NOT NULL,
  last_job_id uuid,
  walk_until uuid,
  cancel_requested boolean NOT NULL DEFAULT false,
  owner text,
  lease_expires_at timestamp with time zone,
  error text,
  created_at timestamp with time zone NOT NULL DEFAULT now(),
  updated_at timestamp with time zone NOT NULL DEFAULT now(),
  finished_at timestamp with time zone,
  CONSTRAINT bulk_actions_action_valid CHECK ((action = ANY ('{retry,cancel,purge,set_priority,move}'::text[]))),
  CONSTRAINT bulk_actions_counts_valid CHECK (((touched >= 0) AND ((total IS NULL) OR (total >= 0)))),
  CONSTRAINT bulk_actions_error_iff_failed CHECK (((status = 'failed'::text) = (error IS NOT NULL))),
  CONSTRAINT bulk_actions_finished_iff_ended CHECK (((status = 'running'::text) = (finished_at IS NULL))),
  CONSTRAINT bulk_actions_names_bounded CHECK ((((tenant IS NULL) OR ((length(tenant) >= 1) AND (length(tenant) <= 128))) AND ((requested_by IS NULL) OR ((length(requested_by) >= 1) AND (length(requested_by) <= 256))))),
  CONSTRAINT bulk_actions_owner_leased CHECK (((num_nonnulls(owner, lease_expires_at) = 0) OR ((num_nonnulls(owner, lease_expires_at) = 2) AND (status = 'running'::text)))),
  CONSTRAINT bulk_actions_pkey PRIMARY KEY (id),
  CONSTRAINT bulk_actions_priority_for_set_priority CHECK ((((action = 'set_priority'::text) = (priority IS NOT NULL)) AND ((priority IS NULL) OR ((priority >= '-1000'::integer) AND (priority <= 1000))))),
  CONSTRAINT bulk_actions_queue_for_move CHECK ((((action = 'move'::text) = (queue IS NOT NULL)) AND ((queue IS NULL) OR ((length(queue) >= 1) AND (length(queue) <= 128))))),
  CONSTRAINT bulk_actions_states_valid CHECK ((states <@ '{waiting,queued,running,retrying,sleeping,succeeded,cancelled,dead}'::text[])),
  CONSTRAINT bulk_actions_status_valid CHECK ((status = ANY ('{running,succeeded,cancelled,failed}'::text[])))
);

CREATE TABLE conveyor.cron_schedules (
  name text NOT NULL,
  kind text NOT NULL,
  cron text NOT NULL,
  timezone text NOT NULL,
  tenant text NOT NULL,
  queue text NOT NULL,
  priority smallint NOT NULL,
  payload jsonb NOT NULL,
  missed_policy text NOT NULL,
  catch_up_limit integer NOT NULL,
  next_tick_at timestamp with time zone,
  last_tick_at timestamp with time zone,
  created_at timestamp with time zone NOT NULL DEFAULT now(),
  updated_at timestamp with time zone NOT NULL DEFAULT now(),
  CONSTRAINT cron_schedules_limit_positive CHECK ((catch_up_limit >= 1)),
  CONSTRAINT cron_schedules_names_bounded CHECK ((((length(name) >= 1) AND (length(name) <= 128)) AND ((length(kind) >= 1) AND (length(kind) <= 128)) AND ((length(tenant) >= 1) AND (length(tenant) <= 128)) AND ((length(queue) >= 1) AND (length(queue) <= 128)))),
  CONSTRAINT cron_schedules_pkey PRIMARY KEY (name),
  CONSTRAINT cron_schedules_policy_valid CHECK ((missed_policy = ANY (ARRAY['skip'::text, 'catch-up'::text]))),
  CONSTRAINT cron_schedules_priority_range CHECK (((priority >= '-1000'::integer) AND (priority <= 1000)))
);

CREATE TABLE conveyor.events (
  id uuid NOT NULL,
  tenant text NOT NULL,
  name text NOT NULL,
  event_key text NOT NULL,
  payload jsonb,
  created_at timestamp with time zone NOT NULL DEFAULT now(),
  CONSTRAINT events_names_bounded CHECK ((((length(tenant) >= 1) AND (length(tenant) <= 128)) AND ((length(name) >= 1) AND (length(name) <= 255)) AND (length(event_key) <= 255))),
  CONSTRAINT events_pkey PRIMARY KEY (id)
);

CREATE TABLE conveyor.flow_jobs (
  job_id uuid NOT NULL,
  flow_id uuid NOT NULL,
  node text NOT NULL,
  CONSTRAINT flow_jobs_node_bounded CHECK (((length(node) >= 1) AND (length(node) <= 255))),
  CONSTRAINT flow_jobs_pkey PRIMARY KEY (job_id)
);

CREATE TABLE conveyor.flows (
  id uuid NOT NULL,
  tenant text NOT NULL,
  kind text NOT NULL,
  name text,
  idempotency_key text,
  request_hash text NOT NULL,
  callback_job_id uuid,
  created_at timestamp with time zone NOT NULL DEFAULT now(),
  CONSTRAINT flows_callback_iff_batch CHECK (((kind = 'batch'::text) = (callback_job_id IS NOT NULL))),
  CONSTRAINT flows_kind_valid CHECK ((kind = ANY ('{flow,batch}'::text[]))),
  CONSTRAINT flows_name_bounded CHECK (((name IS NULL) OR ((length(name) >= 1) AND (length(name) <= 255)))),
  CONSTRAINT flows_pkey PRIMARY KEY (id)
);

CREATE TABLE conveyor.job_batch_members (
  job_id uuid NOT NULL,
  execution_id uuid NOT NULL,
  batch_id uuid NOT NULL,
  batch_size integer NOT NULL,
  started_at timestamp with time zone NOT NULL DEFAULT now(),
  CONSTRAINT job_batch_members_pkey PRIMARY KEY (job_id, execution_id),
  CONSTRAINT job_batch_members_size_positive CHECK ((batch_size >= 1))
);

CREATE TABLE conveyor.job_dependencies (
  depends_on uuid NOT NULL,
  job_id uuid NOT NULL,
  on_failure text NOT NULL,
  CONSTRAINT job_dependencies_not_self CHECK ((depends_on <> job_id)),
  CONSTRAINT job_dependencies_pkey PRIMARY KEY (depends_on, job_id),
  CONSTRAINT job_dependencies_policy_valid CHECK ((on_failure = ANY ('{fail,cancel,run}'::text[])))
);

CREATE TABLE conveyor.job_dependency_state (
  job_id uuid NOT NULL,
  pending integer NOT NULL,
  failed integer NOT NULL DEFAULT 0,
  blocking integer NOT NULL DEFAULT 0,
  blocker uuid,
  run_if text NOT NULL DEFAULT 'all'::text,
  ended_by_dependency boolean NOT NULL DEFAULT false,
  CONSTRAINT job_dependency_state_counts_valid CHECK (((pending >= 0) AND (failed >= 0) AND (blocking >= 0) AND (blocking <= failed) AND ((blocking = 0) = (blocker IS NULL)))),
  CONSTRAINT job_dependency_state_pkey PRIMARY KEY (job_id),
  CONSTRAINT job_dependency_state_run_if_valid CHECK ((run_if = ANY ('{all,any_failed}'::text[])))
);

CREATE TABLE conveyor.job_ends (
  tx xid8 NOT NULL DEFAULT pg_current_xact_id(),
  job_id uuid NOT NULL,
  dir integer NOT NULL,
  bad boolean NOT NULL,
  CONSTRAINT job_ends_dir_check CHECK ((dir = ANY (ARRAY[1, '-1'::integer])))
);

CREATE TABLE conveyor.job_executions (
  id uuid NOT NULL,
  job_id uuid NOT NULL,
  attempt integer NOT NULL,
  worker_id text NOT NULL,
  started_at timestamp with time zone NOT NULL DEFAULT now(),
  finished_at timestamp with time zone,
  outcome text NOT NULL DEFAULT 'running'::text,
  error jsonb,
  CONSTRAINT job_executions_attempt_positive CHECK ((attempt >= 1)),
  CONSTRAINT job_executions_ended CHECK ((finished_at IS NOT NULL)),
  CONSTRAINT job_executions_finished_iff_done CHECK (((outcome = 'running'::text) = (finished_at IS NULL))),
  CONSTRAINT job_executions_outcome_valid CHECK ((outcome = ANY (ARRAY['running'::text, 'succeeded'::text, 'failed'::text, 'timeout'::text, 'retry_after'::text, 'cancelled'::text, 'lease_expired'::text, 'interrupted'::text, 'suspended'::text]))),
  CONSTRAINT job_executions_pkey PRIMARY KEY (id)
) WITH (fillfactor=100);

CREATE TABLE conveyor.job_history (

) PARTITION OF conveyor.jobs FOR VALUES IN ('succeeded', 'cancelled') PARTITION BY RANGE (finished_at);

CREATE TABLE conveyor.job_history_default (

) PARTITION OF conveyor.job_history DEFAULT;

CREATE TABLE conveyor.job_keys (
  tenant text NOT NULL,
  idempotency_key text NOT NULL,
  job_id uuid NOT NULL,
  CONSTRAINT job_keys_pkey PRIMARY KEY (tenant, idempotency_key)
);

CREATE TABLE conveyor.job_requeues (
  job_id uuid NOT NULL,
  seq bigint NOT NULL GENERATED ALWAYS AS IDENTITY,
  at timestamp with time zone NOT NULL DEFAULT now(),
  action text NOT NULL,
  from_step text,
  bulk_action_id uuid,
  CONSTRAINT job_requeues_action_valid CHECK ((action = ANY (ARRAY['requeue'::text, 'bulk_retry'::text, 'resume'::text, 'rerun'::text]))),
  CONSTRAINT job_requeues_bulk_action_iff_bulk_retry CHECK (((action = 'bulk_retry'::text) = (bulk_action_id IS NOT NULL))),
  CONSTRAINT job_requeues_pkey PRIMARY KEY (job_id, seq),
  CONSTRAINT job_requeues_step_bounded CHECK (((from_step IS NULL) OR ((length(from_step) >= 1) AND (length(from_step) <= 255)))),
  CONSTRAINT job_requeues_step_iff_rerun CHECK (((action = 'rerun'::text) = (from_step IS NOT NULL)))
);

CREATE TABLE conveyor.job_steps (
  job_id uuid NOT NULL,
  name text NOT NULL,
  seq bigint NOT NULL GENERATED ALWAYS AS IDENTITY,
  kind text NOT NULL,
  state text NOT NULL,
  result jsonb,
  error jsonb,
  attempt integer NOT NULL,
  execution_id uuid NOT NULL,
  started_at timestamp with time zone NOT NULL,
  finished_at timestamp with time zone,
  wake_at timestamp with time zone,
  tenant text NOT NULL,
  event text,
  event_key text,
  event_id uuid,
  CONSTRAINT job_steps_event_id_iff_received CHECK (((state = 'received'::text) = (event_id IS NOT NULL))),
  CONSTRAINT job_steps_event_iff_wait CHECK (((kind = 'wait'::text) = ((event IS NOT NULL) AND (event_key IS NOT NULL)))),
  CONSTRAINT job_steps_kind_valid CHECK ((kind = ANY ('{step,sleep,wait}'::text[]))),
  CONSTRAINT job_steps_name_bounded CHECK (((length(name) >= 1) AND (length(name) <= 255))),
  CONSTRAINT job_steps_pkey PRIMARY KEY (job_id, name),
  CONSTRAINT job_steps_state_valid CHECK ((((kind = 'step'::text) AND (state = ANY ('{completed,failed}'::text[]))) OR ((kind = 'sleep'::text) AND (state = ANY ('{asleep,awake}'::text[]))) OR ((kind = 'wait'::text) AND (state = ANY ('{awaiting,received,timed_out}'::text[])))))
);

CREATE TABLE conveyor.job_waits (
  job_id uuid NOT NULL,
  waiter uuid NOT NULL,
  expires_at timestamp with time zone NOT NULL,
  CONSTRAINT job_waits_pkey PRIMARY KEY (job_id, waiter)
);

CREATE TABLE conveyor.jobs (
  id uuid NOT NULL,
  tenant text NOT NULL,
  queue text NOT NULL,
  kind text NOT NULL,
  payload jsonb NOT NULL,
  priority smallint NOT NULL DEFAULT 0,
  status text NOT NULL DEFAULT 'queued'::text,
  attempts integer NOT NULL DEFAULT 0,
  max_attempts integer NOT NULL,
  run_at timestamp with time zone NOT NULL DEFAULT now(),
  locked_by text,
  current_execution_id uuid,
  lease_expires_at timestamp with time zone,
  cancel_requested boolean NOT NULL DEFAULT false,
  idempotency_key text,
  last_error jsonb,
  result jsonb,
  created_at timestamp with time zone NOT NULL DEFAULT now(),
  updated_at timestamp with time zone NOT NULL DEFAULT now(),
  started_at timestamp with time zone,
  finished_at timestamp with time zone,
  unique_key text,
  unique_states text[],
  progress jsonb,
  progress_updated_at timestamp with time zone,
  has_dependents boolean NOT NULL DEFAULT false,
  trace_context jsonb,
  limit_key text,
  awaited boolean NOT NULL DEFAULT false,
  dead_letter_id uuid,
  dead_reason text,
  CONSTRAINT jobs_attempts_nonnegative CHECK ((attempts >= 0)),
  CONSTRAINT jobs_attempts_within_max CHECK ((attempts <= max_attempts)),
  CONSTRAINT jobs_dead_letter_valid CHECK ((((dead_letter_id IS NULL) = (dead_reason IS NULL)) AND ((dead_letter_id IS NULL) OR (status = 'dead'::text)) AND ((dead_reason IS NULL) OR (dead_reason = ANY ('{attempts_exhausted,permanent_error,dependency_failed}'::text[]))))) NOT VALID NOT VALID,
  CONSTRAINT jobs_finished_iff_terminal CHECK (((status = ANY ('{succeeded,cancelled,dead}'::text[])) = (finished_at IS NOT NULL))),
  CONSTRAINT jobs_limit_key_bounded CHECK (((limit_key IS NULL) OR ((length(limit_key) >= 1) AND (length(limit_key) <= 256)))),
  CONSTRAINT jobs_max_attempts_positive CHECK ((max_attempts >= 1)),
  CONSTRAINT jobs_names_bounded CHECK ((((length(tenant) >= 1) AND (length(tenant) <= 128)) AND ((length(queue) >= 1) AND (length(queue) <= 128)) AND ((length(kind) >= 1) AND (length(kind) <= 128)))),
  CONSTRAINT jobs_priority_range CHECK (((priority >= '-1000'::integer) AND (priority <= 1000))),
  CONSTRAINT jobs_run_at_bounded CHECK (((run_at >= '2000-01-01 00:00:00+00'::timestamp with time zone) AND (run_at < '10000-01-01 00:00:00+00'::timestamp with time zone))),
  CONSTRAINT jobs_running_owned CHECK (
CASE status
    WHEN 'running'::text THEN (num_nonnulls(locked_by, current_execution_id, lease_expires_at) = 3)
    WHEN 'succeeded'::text THEN ((lease_expires_at IS NULL) AND (num_nonnulls(locked_by, current_execution_id) = ANY (ARRAY[0, 2])))
    ELSE (num_nonnulls(locked_by, current_execution_id, lease_expires_at) = 0)
END) NOT VALID NOT VALID,
  CONSTRAINT jobs_status_valid CHECK ((status = ANY ('{waiting,queued,running,retrying,sleeping,succeeded,cancelled,dead}'::text[]))),
  CONSTRAINT jobs_unique_key_bounded CHECK (((unique_key IS NULL) OR ((length(unique_key) >= 1) AND (length(unique_key) <= 255)))),
  CONSTRAINT jobs_unique_key_held_in_state CHECK (((unique_key IS NULL) OR ((unique_states IS NOT NULL) AND ((status = ANY (unique_states)) OR ((status = 'sleeping'::text) AND ('running'::text = ANY (unique_states))))))),
  CONSTRAINT jobs_unique_states_valid CHECK (((unique_states IS NULL) OR ((unique_states <@ '{queued,retrying,running}'::text[]) AND ('queued'::text = ANY (unique_states)))))
) PARTITION BY LIST (status);

CREATE TABLE conveyor.jobs_dead (
  CONSTRAINT jobs_dead_pkey PRIMARY KEY (id)
) PARTITION OF conveyor.jobs FOR VALUES IN ('dead');

CREATE TABLE conveyor.jobs_live (
  CONSTRAINT jobs_live_pkey PRIMARY KEY (id)
) PARTITION OF conveyor.jobs FOR VALUES IN ('waiting', 'queued', 'running', 'retrying', 'sleeping') WITH (autovacuum_vacuum_scale_factor=0, autovacuum_vacuum_threshold=10000, autovacuum_vacuum_cost_delay=0, autovacuum_analyze_scale_factor=0.01);

CREATE TABLE conveyor.key_limit_state (
  queue text NOT NULL,
  limit_key text NOT NULL,
  window_started_at timestamp with time zone,
  window_count integer NOT NULL DEFAULT 0,
  CONSTRAINT key_limit_state_pkey PRIMARY KEY (queue, limit_key),
  CONSTRAINT key_limit_state_window_count_nonnegative CHECK ((window_count >= 0))
);

CREATE TABLE conveyor.key_limits (
  queue text NOT NULL,
  limit_key text NOT NULL,
  concurrency_limit integer,
  rate_limit integer,
  rate_interval_ms integer,
  updated_at timestamp with time zone NOT NULL DEFAULT now(),
  CONSTRAINT key_limits_concurrency_positive CHECK (((concurrency_limit IS NULL) OR (concurrency_limit >= 1))),
  CONSTRAINT key_limits_key_bounded CHECK ((length(limit_key) <= 256)),
  CONSTRAINT key_limits_pkey PRIMARY KEY (queue, limit_key),
  CONSTRAINT key_limits_queue_bounded CHECK (((length(queue) >= 1) AND (length(queue) <= 128))),
  CONSTRAINT key_limits_rate_complete CHECK (((rate_limit IS NULL) = (rate_interval_ms IS NULL))),
  CONSTRAINT key_limits_rate_positive CHECK (((rate_limit IS NULL) OR ((rate_limit >= 1) AND (rate_interval_ms >= 1))))
);

CREATE TABLE conveyor.migrations (
  version integer NOT NULL,
  name text NOT NULL,
  applied_at timestamp with time zone NOT NULL DEFAULT now(),
  sha256 text,
  CONSTRAINT migrations_pkey PRIMARY KEY (version)
);

CREATE TABLE conveyor.queue_settings (
  name text NOT NULL,
  paused boolean NOT NULL DEFAULT false,
  concurrency_limit integer,
  rate_limit integer,
  rate_interval_ms integer,
  window_started_at timestamp with time zone,
  window_count integer NOT NULL DEFAULT 0,
  updated_at timestamp with time zone NOT NULL DEFAULT now(),
  CONSTRAINT queue_settings_concurrency_positive CHECK (((concurrency_limit IS NULL) OR (concurrency_limit >= 1))),
  CONSTRAINT queue_settings_name_bounded CHECK (((length(name) >= 1) AND (length(name) <= 128))),
  CONSTRAINT queue_settings_pkey PRIMARY KEY (name),
  CONSTRAINT queue_settings_rate_complete CHECK (((rate_limit IS NULL) = (rate_interval_ms IS NULL))),
  CONSTRAINT queue_settings_rate_positive CHECK (((rate_limit IS NULL) OR ((rate_limit >= 1) AND (rate_interval_ms >= 1)))),
  CONSTRAINT queue_settings_window_count_nonnegative CHECK ((window_count >= 0))
);

CREATE TABLE conveyor.routines (
  name text NOT NULL,
  sha256 text NOT NULL,
  version integer NOT NULL,
  installed_at timestamp with time zone NOT NULL DEFAULT now(),
  CONSTRAINT routines_pkey PRIMARY KEY (name)
);

CREATE TABLE conveyor.tenant_settings (
  tenant text NOT NULL,
  concurrency_limit integer,
  updated_at timestamp with time zone NOT NULL DEFAULT now(),
  CONSTRAINT tenant_settings_concurrency_positive CHECK (((concurrency_limit IS NULL) OR (concurrency_limit >= 1))),
  CONSTRAINT tenant_settings_pkey PRIMARY KEY (tenant),
  CONSTRAINT tenant_settings_tenant_bounded CHECK (((length(tenant) >= 1) AND (length(tenant) <= 128)))
);

CREATE TABLE conveyor.workers (
  id text NOT NULL,
  hostname text NOT NULL,
  pid integer NOT NULL,
  queues text[],
  kinds text[] NOT NULL,
  concurrency integer NOT NULL,
  started_at timestamp with time zone NOT NULL DEFAULT now(),
  last_seen_at timestamp with time zone NOT NULL DEFAULT now(),
  CONSTRAINT workers_concurrency_positive CHECK ((concurrency >= 1)),
  CONSTRAINT workers_pkey PRIMARY KEY (id)
);

CREATE INDEX bulk_actions_running_idx ON conveyor.bulk_actions USING btree (lease_expires_at) WHERE (status = 'running'::text);
CREATE INDEX bulk_actions_tenant_idx ON conveyor.bulk_actions USING btree (tenant, id);
CREATE INDEX events_created_idx ON conveyor.events USING btree (created_at);
CREATE INDEX events_match_idx ON conveyor.events USING btree (tenant, name, event_key, created_at);
CREATE UNIQUE INDEX flow_jobs_flow_node_idx ON conveyor.flow_jobs USING btree (flow_id, node);
CREATE INDEX flows_created_idx ON conveyor.flows USING btree (created_at);
CREATE UNIQUE INDEX flows_idempotency_key_idx ON conveyor.flows USING btree (tenant, idempotency_key) WHERE (idempotency_key IS NOT NULL);
CREATE INDEX flows_tenant_idx ON conveyor.flows USING btree (tenant, id);
CREATE INDEX job_dependencies_job_idx ON conveyor.job_dependencies USING btree (job_id, depends_on);
CREATE INDEX job_ends_tx_idx ON conveyor.job_ends USING btree (tx);
CREATE INDEX job_executions_job_idx ON conveyor.job_executions USING btree (job_id, started_at);
CREATE INDEX job_history_by_queue_state_tenant_idx ON ONLY conveyor.job_history USING btree (queue, status, tenant);
CREATE INDEX job_history_id_idx ON ONLY conveyor.job_history USING btree (id);
CREATE INDEX job_keys_job_idx ON conveyor.job_keys USING btree (job_id);
CREATE INDEX job_steps_open_waits_idx ON conveyor.job_steps USING btree (tenant, event, event_key) WHERE (state = 'awaiting'::text);
CREATE INDEX job_waits_expires_idx ON conveyor.job_waits USING btree (expires_at);
CREATE INDEX jobs_by_queue_state_tenant_idx ON conveyor.jobs_live USING btree (queue, status, tenant) WHERE (status = ANY (ARRAY['waiting'::text, 'sleeping'::text]));
CREATE INDEX jobs_dead_by_queue_idx ON conveyor.jobs_dead USING btree (queue, id);
CREATE INDEX jobs_dead_finished_idx ON conveyor.jobs_dead USING btree (finished_at);
CREATE INDEX jobs_dead_letter_by_tenant_idx ON conveyor.jobs_dead USING btree (tenant, dead_letter_id);
CREATE UNIQUE INDEX jobs_dead_letter_id_idx ON conveyor.jobs_dead USING btree (dead_letter_id);
CREATE INDEX jobs_finished_by_kind_idx ON ONLY conveyor.job_history USING btree (kind, finished_at);
CREATE INDEX jobs_idempotency_key_idx ON ONLY conveyor.jobs USING btree (tenant, idempotency_key) WHERE (idempotency_key IS NOT NULL);
CREATE INDEX jobs_ready_by_limit_key_idx ON conveyor.jobs_live USING btree (queue, limit_key, priority, run_at, id) WHERE ((status = ANY (ARRAY['queued'::text, 'retrying'::text])) AND (limit_key IS NOT NULL));
CREATE INDEX jobs_ready_by_queue_idx ON conveyor.jobs_live USING btree (queue, priority, run_at, id) WHERE (status = ANY (ARRAY['queued'::text, 'retrying'::text]));
CREATE INDEX jobs_ready_idx ON conveyor.jobs_live USING btree (priority, run_at, id) WHERE (status = ANY (ARRAY['queued'::text, 'retrying'::text]));
CREATE INDEX jobs_running_by_limit_key_idx ON conveyor.jobs_live USING btree (queue, limit_key) WHERE ((status = 'running'::text) AND (limit_key IS NOT NULL));
CREATE INDEX jobs_running_lease_idx ON conveyor.jobs_live USING btree (lease_expires_at) WHERE (status = 'running'::text);
CREATE INDEX jobs_sleeping_idx ON conveyor.jobs_live USING btree (run_at) WHERE (status = 'sleeping'::text);
CREATE UNIQUE INDEX jobs_unique_key_idx ON conveyor.jobs_live USING btree (tenant, unique_key) WHERE (unique_key IS NOT NULL);
CREATE INDEX jobs_waiting_idx ON conveyor.jobs_live USING btree (queue) WHERE (status = 'waiting'::text);
CREATE INDEX key_limits_queues_idx ON conveyor.key_limits USING btree (queue) WHERE (limit_key = ''::text);

CREATE STATISTICS conveyor.jobs_dead_queue_status_stats (mcv) ON queue, status FROM conveyor.jobs_dead;
CREATE STATISTICS conveyor.jobs_dead_tenant_queue_status_stats (mcv) ON tenant, queue, status FROM conveyor.jobs_dead;
CREATE STATISTICS conveyor.jobs_live_kind_status_stats (mcv) ON kind, status FROM conveyor.jobs_live;
CREATE STATISTICS conveyor.jobs_live_queue_status_stats (mcv) ON queue, status FROM conveyor.jobs_live;
CREATE STATISTICS conveyor.jobs_live_tenant_queue_status_stats (mcv) ON tenant, queue, status FROM conveyor.jobs_live;

CREATE VIEW conveyor.job_attempts AS
 SELECT e.id,
    e.job_id,
    e.attempt,
    e.worker_id,
    e.started_at,
    e.finished_at,
    e.outcome,
    e.error
   FROM conveyor.job_executions e
UNION ALL
 SELECT j.current_execution_id AS id,
    j.id AS job_id,
    j.attempts AS attempt,
    j.locked_by AS worker_id,
    j.started_at,
    NULL::timestamp with time zone AS finished_at,
    'running'::text AS outcome,
    NULL::jsonb AS error
   FROM conveyor.jobs j
  WHERE j.status = 'running'::text
UNION ALL
 SELECT h.current_execution_id AS id,
    h.id AS job_id,
    h.attempts AS attempt,
    h.locked_by AS worker_id,
    h.started_at,
    h.finished_at,
    'succeeded'::text AS outcome,
    NULL::jsonb AS error
   FROM conveyor.job_history h
  WHERE h.status = 'succeeded'::text AND h.current_execution_id IS NOT NULL;

-- FUNCTION conveyor.job_claim_by_key(p_worker_id text, p_limit integer, p_kinds text[], p_queue text, p_lease_ms double precision, p_execution_ids uuid[], p_lock_timeout_ms integer, p_after_key text, p_walk integer) RETURNS TABLE(id uuid, tenant text, queue text, kind text, payload jsonb, attempts integer, max_attempts integer, current_execution_id uuid, idempotency_key text, waited_ms double precision, next_key text) LANGUAGE plpgsql
-- FUNCTION conveyor.job_claim_fair(p_worker_id text, p_limit integer, p_kinds text[], p_queues text[], p_lease_ms double precision, p_execution_ids uuid[], p_lock_timeout_ms integer) RETURNS TABLE(id uuid, tenant text, queue text, kind text, payload jsonb, attempts integer, max_attempts integer, current_execution_id uuid, idempotency_key text, waited_ms double precision) LANGUAGE plpgsql
-- FUNCTION conveyor.job_claim_from_limited_queue(p_worker_id text, p_limit integer, p_kinds text[], p_queue text, p_lease_ms double precision, p_execution_ids uuid[], p_lock_timeout_ms integer) RETURNS TABLE(id uuid, tenant text, queue text, kind text, payload jsonb, attempts integer, max_attempts integer, current_execution_id uuid, idempotency_key text, waited_ms double precision) LANGUAGE plpgsql
-- FUNCTION conveyor.job_dependents_check(p_jobs uuid[]) RETURNS void LANGUAGE plpgsql
-- FUNCTION conveyor.job_dependents_release(p_ids uuid[], p_dirs integer[], p_bad boolean[]) RETURNS void LANGUAGE plpgsql
-- FUNCTION conveyor.job_dependents_settle(p_jobs uuid[], OUT r_ids uuid[], OUT r_dirs integer[], OUT r_bad boolean[]) RETURNS record LANGUAGE plpgsql
-- FUNCTION conveyor.job_ends_release() RETURNS trigger LANGUAGE plpgsql
-- FUNCTION conveyor.job_history_bound(p_partition oid, p_end text) RETURNS timestamp with time zone LANGUAGE sql
-- FUNCTION conveyor.job_history_detach(p_cutoff timestamp with time zone, p_kept text[], p_lock_timeout_ms integer) RETURNS text[] LANGUAGE plpgsql
-- FUNCTION conveyor.job_history_drop(p_table text) RETURNS integer LANGUAGE plpgsql
-- FUNCTION conveyor.job_history_extend(p_from date, p_days integer) RETURNS integer LANGUAGE plpgsql
-- FUNCTION conveyor.job_history_span(p_partition text) RETURNS TABLE(starts_at timestamp with time zone, ends_at timestamp with time zone) LANGUAGE sql
-- FUNCTION conveyor.job_limit_keys_ready(p_queue text, p_after text, p_until text, p_count integer) RETURNS SETOF text LANGUAGE sql
-- FUNCTION conveyor.jobs_deleted() RETURNS trigger LANGUAGE plpgsql
-- FUNCTION conveyor.jobs_ended(p_ids uuid[], p_bad boolean[], p_depended boolean[], p_awaited boolean[], p_dir integer, p_release boolean) RETURNS integer LANGUAGE plpgsql
-- FUNCTION conveyor.jobs_estimate(p_status text, p_queue text, p_tenant text) RETURNS bigint LANGUAGE plpgsql
-- FUNCTION conveyor.jobs_forget(p_ids uuid[], p_depended uuid[]) RETURNS void LANGUAGE plpgsql
-- FUNCTION conveyor.jobs_notify_ready() RETURNS trigger LANGUAGE plpgsql
-- FUNCTION conveyor.jobs_status_changed() RETURNS trigger LANGUAGE plpgsql
-- FUNCTION conveyor.uuid_v7() RETURNS uuid LANGUAGE sql

CREATE CONSTRAINT TRIGGER job_ends_release AFTER INSERT ON conveyor.job_ends DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION conveyor.job_ends_release();
CREATE TRIGGER jobs_deleted AFTER DELETE ON conveyor.jobs REFERENCING OLD TABLE AS deleted FOR EACH STATEMENT EXECUTE FUNCTION conveyor.jobs_deleted();
CREATE TRIGGER jobs_notify_ready AFTER INSERT ON conveyor.jobs_live REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION conveyor.jobs_notify_ready();
CREATE TRIGGER jobs_status_changed BEFORE UPDATE OF status ON conveyor.jobs FOR EACH ROW WHEN (((new.unique_key IS NOT NULL) OR ((old.status = ANY (ARRAY['waiting'::text, 'queued'::text, 'running'::text, 'retrying'::text, 'sleeping'::text])) <> (new.status = ANY (ARRAY['waiting'::text, 'queued'::text, 'running'::text, 'retrying'::text, 'sleeping'::text]))) OR ((new.status = ANY (ARRAY['queued'::text, 'retrying'::text])) AND (old.status <> ALL (ARRAY['queued'::text, 'retrying'::text]))) OR ((old.dead_letter_id IS NOT NULL) AND (new.status <> 'dead'::text)))) EXECUTE FUNCTION conveyor.jobs_status_changed();
