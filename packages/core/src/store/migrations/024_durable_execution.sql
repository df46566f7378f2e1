-- Durable execution: a handler's steps, sleeps and waits for events.
--
-- A job that sleeps or waits is `sleeping`: not claimable, holding no slot,
-- until the waker (sql/steps.ts jobWakeSleeping) queues it at `run_at` or an
-- event that a wait matches queues it at once. Its attempt ended as
-- `suspended`, and was given back.
ALTER TABLE {{schema}}.jobs DROP CONSTRAINT IF EXISTS jobs_status_valid;
ALTER TABLE {{schema}}.jobs ADD CONSTRAINT jobs_status_valid
  CHECK (status = ANY ('{waiting,queued,running,retrying,sleeping,succeeded,cancelled,dead}'::text[])) NOT VALID;
ALTER TABLE {{schema}}.jobs VALIDATE CONSTRAINT jobs_status_valid;
-- A sleeping job is mid-run: it holds its unique key wherever `running` does.
ALTER TABLE {{schema}}.jobs DROP CONSTRAINT IF EXISTS jobs_unique_key_held_in_state;
ALTER TABLE {{schema}}.jobs ADD CONSTRAINT jobs_unique_key_held_in_state
  CHECK (unique_key IS NULL OR (unique_states IS NOT NULL
         AND (status = ANY (unique_states) OR (status = 'sleeping' AND 'running' = ANY (unique_states))))) NOT VALID;
ALTER TABLE {{schema}}.jobs VALIDATE CONSTRAINT jobs_unique_key_held_in_state;
ALTER TABLE {{schema}}.job_executions DROP CONSTRAINT IF EXISTS job_executions_outcome_valid;
ALTER TABLE {{schema}}.job_executions ADD CONSTRAINT job_executions_outcome_valid
  CHECK (outcome = ANY (ARRAY['running', 'succeeded', 'failed', 'timeout', 'retry_after', 'cancelled', 'lease_expired', 'interrupted', 'suspended'])) NOT VALID;
ALTER TABLE {{schema}}.job_executions VALIDATE CONSTRAINT job_executions_outcome_valid;
ALTER TABLE {{schema}}.bulk_actions DROP CONSTRAINT IF EXISTS bulk_actions_states_valid;
ALTER TABLE {{schema}}.bulk_actions ADD CONSTRAINT bulk_actions_states_valid
  CHECK (states <@ '{waiting,queued,running,retrying,sleeping,succeeded,cancelled,dead}'::text[]);

-- The waker reads due sleepers through this index alone: a million sleeping
-- jobs are not in the claim's indexes, which hold ready states only.
CREATE INDEX IF NOT EXISTS jobs_sleeping_idx ON {{schema}}.jobs (run_at) WHERE status = 'sleeping';
-- Exact counts per state (sql/queues.ts) read every state but the ready ones here.
CREATE INDEX IF NOT EXISTS jobs_by_queue_state_tenant_idx ON {{schema}}.jobs (queue, status, tenant)
  WHERE status IN ('waiting', 'running', 'sleeping', 'succeeded', 'cancelled', 'dead');
DROP INDEX IF EXISTS {{schema}}.jobs_by_queue_status_tenant_idx;

-- One row per step, sleep or wait a job recorded, named by the handler and
-- unique within the job. Written only by a statement fenced on the job's
-- current execution id; deleted with the job (jobs_delete_steps).
CREATE TABLE IF NOT EXISTS {{schema}}.job_steps (
  job_id uuid NOT NULL,
  name text NOT NULL,
  -- The order in which records were first made, across jobs: what "this step and every later one" means
  -- for a job (unique even for steps recorded side by side). Shown per job as 1, 2, … (jobStepsList).
  seq bigint GENERATED ALWAYS AS IDENTITY,
  kind text NOT NULL,
  state text NOT NULL,
  -- A step's result, or a wait's event payload.
  result jsonb,
  error jsonb,
  attempt integer NOT NULL,
  execution_id uuid NOT NULL,
  started_at timestamptz NOT NULL,
  finished_at timestamptz,
  -- A sleep's wake time, or a wait's deadline (null: no deadline).
  wake_at timestamptz,
  tenant text NOT NULL,
  event text,
  event_key text,
  event_id uuid,
  CONSTRAINT job_steps_pkey PRIMARY KEY (job_id, name),
  CONSTRAINT job_steps_name_bounded CHECK (length(name) BETWEEN 1 AND 255),
  CONSTRAINT job_steps_kind_valid CHECK (kind = ANY ('{step,sleep,wait}'::text[])),
  CONSTRAINT job_steps_state_valid CHECK (
    (kind = 'step' AND state = ANY ('{completed,failed}'::text[]))
    OR (kind = 'sleep' AND state = ANY ('{sleeping,completed}'::text[]))
    OR (kind = 'wait' AND state = ANY ('{waiting,received,timed_out}'::text[]))),
  CONSTRAINT job_steps_event_iff_wait CHECK ((kind = 'wait') = (event IS NOT NULL AND event_key IS NOT NULL)),
  CONSTRAINT job_steps_event_id_iff_received CHECK ((state = 'received') = (event_id IS NOT NULL))
);
-- sendEvent finds the open waits an event matches here.
CREATE INDEX IF NOT EXISTS job_steps_open_waits_idx ON {{schema}}.job_steps (tenant, event, event_key) WHERE state = 'waiting';

-- Events sent to waiting jobs (sendEvent). A wait takes the first matching
-- event sent at or after its job was created that the job has not received.
CREATE TABLE IF NOT EXISTS {{schema}}.events (
  id uuid NOT NULL,
  tenant text NOT NULL,
  name text NOT NULL,
  event_key text NOT NULL,
  payload jsonb,
  created_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT events_pkey PRIMARY KEY (id),
  CONSTRAINT events_names_bounded CHECK (length(tenant) BETWEEN 1 AND 128 AND length(name) BETWEEN 1 AND 255 AND length(event_key) <= 255)
);
CREATE INDEX IF NOT EXISTS events_match_idx ON {{schema}}.events (tenant, name, event_key, created_at);
CREATE INDEX IF NOT EXISTS events_created_idx ON {{schema}}.events (created_at);
