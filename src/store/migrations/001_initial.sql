-- Conveyor schema, version 1. `{{schema}}` is replaced by the quoted schema name.

-- UUIDv7 made in the database, for rows created inside a statement (execution
-- ids on claim, dead-letter ids): 48 bits of Unix milliseconds over a random
-- v4 UUID, with the version nibble turned from 4 (0100) into 7 (0111).
CREATE FUNCTION {{schema}}.uuid_v7() RETURNS uuid LANGUAGE sql VOLATILE AS $$
  SELECT encode(
    set_bit(set_bit(
      overlay(uuid_send(gen_random_uuid())
        PLACING substring(int8send((extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3)
        FROM 1 FOR 6),
      52, 1), 53, 1),
    'hex')::uuid
$$;

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
  CONSTRAINT jobs_status_valid CHECK (status IN ('queued', 'running', 'retrying', 'succeeded', 'cancelled', 'dead')),
  CONSTRAINT jobs_attempts_nonnegative CHECK (attempts >= 0),
  CONSTRAINT jobs_max_attempts_positive CHECK (max_attempts >= 1),
  CONSTRAINT jobs_attempts_within_max CHECK (attempts <= max_attempts),
  CONSTRAINT jobs_priority_range CHECK (priority BETWEEN -1000 AND 1000),
  CONSTRAINT jobs_names_bounded CHECK (
    length(tenant) BETWEEN 1 AND 128 AND length(queue) BETWEEN 1 AND 128 AND length(kind) BETWEEN 1 AND 128),
  -- A running job always has an owner, an execution and a lease; nothing else has any of them.
  CONSTRAINT jobs_running_owned CHECK (
    (status = 'running') = (locked_by IS NOT NULL AND current_execution_id IS NOT NULL AND lease_expires_at IS NOT NULL)
    AND (status = 'running' OR (locked_by IS NULL AND current_execution_id IS NULL AND lease_expires_at IS NULL))),
  CONSTRAINT jobs_finished_iff_terminal CHECK (
    (status IN ('succeeded', 'cancelled', 'dead')) = (finished_at IS NOT NULL))
);

-- Claim path, all queues: the only rows it ever reads are ready ones, so the
-- index stays as small as the backlog however many finished jobs are kept.
CREATE INDEX jobs_ready_idx ON {{schema}}.jobs (priority, run_at, id)
  WHERE status IN ('queued', 'retrying');
-- Claim path for workers bound to named queues.
CREATE INDEX jobs_ready_by_queue_idx ON {{schema}}.jobs (queue, priority, run_at, id)
  WHERE status IN ('queued', 'retrying');
-- Reclaim sweep: running jobs by lease expiry.
CREATE INDEX jobs_running_lease_idx ON {{schema}}.jobs (lease_expires_at)
  WHERE status = 'running';
-- Idempotency keys are unique per tenant; the constraint, not a check-then-insert, settles races.
CREATE UNIQUE INDEX jobs_idempotency_key_idx ON {{schema}}.jobs (tenant, idempotency_key)
  WHERE idempotency_key IS NOT NULL;

CREATE TABLE {{schema}}.job_executions (
  id           uuid        PRIMARY KEY,
  job_id       uuid        NOT NULL REFERENCES {{schema}}.jobs (id) ON DELETE CASCADE,
  attempt      integer     NOT NULL,
  worker_id    text        NOT NULL,
  started_at   timestamptz NOT NULL DEFAULT now(),
  finished_at  timestamptz,
  outcome      text        NOT NULL DEFAULT 'running',
  error        jsonb,
  CONSTRAINT job_executions_attempt_positive CHECK (attempt >= 1),
  CONSTRAINT job_executions_outcome_valid CHECK (outcome IN (
    'running', 'succeeded', 'failed', 'timeout', 'retry_after', 'cancelled', 'lease_expired', 'interrupted')),
  CONSTRAINT job_executions_finished_iff_done CHECK ((outcome = 'running') = (finished_at IS NULL))
);
CREATE INDEX job_executions_job_idx ON {{schema}}.job_executions (job_id, started_at);

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
  CONSTRAINT dead_letter_jobs_reason_valid CHECK (reason IN ('attempts_exhausted', 'permanent_error'))
);
CREATE INDEX dead_letter_jobs_tenant_idx ON {{schema}}.dead_letter_jobs (tenant, id);

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

-- Wake idle workers when ready work arrives. Statement-level with a
-- transition table, so a batch of 100,000 rows sends one notification per
-- queue, and Postgres folds identical notifications within a transaction.
CREATE FUNCTION {{schema}}.jobs_notify_ready() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify(TG_TABLE_SCHEMA || ':jobs', ready.queue)
    FROM (SELECT DISTINCT queue FROM inserted WHERE run_at <= now()) AS ready;
  RETURN NULL;
END
$$;
CREATE TRIGGER jobs_notify_ready AFTER INSERT ON {{schema}}.jobs
  REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION {{schema}}.jobs_notify_ready();

-- Wake workers when a job becomes ready again through an update (requeue from
-- the dead-letter queue, a job handed back at shutdown, a reclaimed lease).
CREATE FUNCTION {{schema}}.jobs_notify_requeued() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.run_at <= now() THEN
    PERFORM pg_notify(TG_TABLE_SCHEMA || ':jobs', NEW.queue);
  END IF;
  RETURN NULL;
END
$$;
CREATE TRIGGER jobs_notify_requeued AFTER UPDATE OF status ON {{schema}}.jobs
  FOR EACH ROW WHEN (NEW.status IN ('queued', 'retrying') AND OLD.status NOT IN ('queued', 'retrying'))
  EXECUTE FUNCTION {{schema}}.jobs_notify_requeued();
