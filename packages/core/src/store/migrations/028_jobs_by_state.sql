-- Jobs stored by state. `jobs` becomes a table partitioned by status:
--   - jobs_live: waiting, queued, running, retrying and sleeping jobs, the
--     only rows a claim, a completion or a lease renewal ever reads;
--   - jobs_dead: dead jobs, kept until their dead letter's retention;
--   - job_history: succeeded and cancelled jobs, partitioned by day (UTC)
--     of finished_at, so that retention drops a day at a time instead of
--     deleting rows; job_history_default takes a row no day partition
--     covers (a clock far off, a finished_at written by hand).
-- A job that ends moves from jobs_live to its state's partition in the
-- statement that ends it (PostgreSQL moves a row whose partition key
-- changes); a requeue moves it back. So the live table and its indexes hold
-- the backlog and nothing else, however much history is kept, and a held
-- xmin or a scan of history never slows a claim. Reads through `jobs` see
-- every state. Day partitions are made ahead by job_history_extend
-- (routines/job-history-extend.ts), called by migrate and by each prune.
--
-- A unique index of a partitioned table must hold its partition key, so
-- the keys that must be unique across every state live elsewhere: the job
-- id in each partition (ids are never reused: a job is inserted once, into
-- jobs_live, and only moves afterwards), unique keys in jobs_live (only live
-- jobs hold one), idempotency keys in job_keys.
--
-- The history that ended before 027's cutoff was copied ahead into
-- job_history_before (027_jobs_history_copy.sql); under this migration's
-- lock the copy catches up with what changed since, and the rest is
-- copied: the live and dead jobs, read through their states' indexes, and
-- history since the cutoff. So the lock lasts as long as copying the
-- backlog and the last moments' writes, not the history.
LOCK TABLE {{schema}}.jobs IN ACCESS EXCLUSIVE MODE;
DROP TRIGGER job_history_copy_mark ON {{schema}}.jobs;
DROP FUNCTION {{schema}}.job_history_copy_mark();

-- Jobs written since the copy passed them, copied again as they are now;
-- then those the copy has not reached.
DELETE FROM {{schema}}.job_history_before AS b USING {{schema}}.job_history_copy_dirty AS d WHERE b.id = d.id;
DELETE FROM {{schema}}.job_keys AS k USING {{schema}}.job_history_copy_dirty AS d WHERE k.job_id = d.id;
CREATE TEMPORARY TABLE job_history_copy_rest ON COMMIT DROP AS
  SELECT j.* FROM {{schema}}.jobs AS j JOIN {{schema}}.job_history_copy_dirty AS d ON d.id = j.id
  UNION ALL
  SELECT * FROM {{schema}}.jobs WHERE id > (SELECT copied_to FROM {{schema}}.job_history_copy);
INSERT INTO {{schema}}.job_history_before
  SELECT * FROM job_history_copy_rest
  WHERE status IN ('succeeded', 'cancelled') AND finished_at < (SELECT cutoff FROM {{schema}}.job_history_copy);
INSERT INTO {{schema}}.job_keys (tenant, idempotency_key, job_id)
  SELECT tenant, idempotency_key, id FROM job_history_copy_rest WHERE idempotency_key IS NOT NULL
  ON CONFLICT DO NOTHING;

CREATE TABLE {{schema}}.jobs_by_state (LIKE {{schema}}.jobs INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE)
  PARTITION BY LIST (status);
CREATE TABLE {{schema}}.jobs_live PARTITION OF {{schema}}.jobs_by_state
  (CONSTRAINT jobs_live_pkey PRIMARY KEY (id))
  FOR VALUES IN ('waiting', 'queued', 'running', 'retrying', 'sleeping');
CREATE TABLE {{schema}}.jobs_dead PARTITION OF {{schema}}.jobs_by_state
  (CONSTRAINT jobs_dead_pkey PRIMARY KEY (id))
  FOR VALUES IN ('dead');
CREATE TABLE {{schema}}.job_history PARTITION OF {{schema}}.jobs_by_state
  FOR VALUES IN ('succeeded', 'cancelled') PARTITION BY RANGE (finished_at);
CREATE TABLE {{schema}}.job_history_default PARTITION OF {{schema}}.job_history DEFAULT;

-- The copied history becomes the partition for everything before the
-- cutoff; its CHECK implies the partition's bounds, so attaching it reads
-- none of its rows. History that ended since the cutoff (an upgrade that
-- ran past midnight, UTC) gets a partition up to tomorrow; job_history_extend
-- adds the days from then on, and retention drops both as it drops a day.
DO $$
DECLARE
  cutoff timestamptz := (SELECT cutoff FROM {{schema}}.job_history_copy);
  tomorrow timestamptz := ((now() AT TIME ZONE 'UTC')::date + 1)::timestamp AT TIME ZONE 'UTC';
BEGIN
  IF EXISTS (SELECT 1 FROM {{schema}}.job_history_before) THEN
    EXECUTE format('ALTER TABLE {{schema}}.job_history_before RENAME TO %I',
                   'job_history_before_' || to_char(cutoff AT TIME ZONE 'UTC', 'YYYYMMDD'));
    EXECUTE format('ALTER TABLE {{schema}}.job_history ATTACH PARTITION {{schema}}.%I FOR VALUES FROM (MINVALUE) TO (%L)',
                   'job_history_before_' || to_char(cutoff AT TIME ZONE 'UTC', 'YYYYMMDD'), cutoff);
  ELSE
    DROP TABLE {{schema}}.job_history_before;
  END IF;
  IF tomorrow > cutoff AND EXISTS (SELECT 1 FROM {{schema}}.jobs WHERE status IN ('succeeded', 'cancelled') AND finished_at >= cutoff) THEN
    EXECUTE format('CREATE TABLE {{schema}}.%I PARTITION OF {{schema}}.job_history FOR VALUES FROM (%L) TO (%L)',
                   'job_history_' || to_char(cutoff AT TIME ZONE 'UTC', 'YYYYMMDD'), cutoff, tomorrow);
  END IF;
END $$;

-- Live and dead jobs through the partial index of each state, and the
-- history since the cutoff through the finished jobs' index: none of
-- these reads the copied history.
ALTER TABLE {{schema}}.dead_letter_jobs DROP CONSTRAINT IF EXISTS dead_letter_jobs_job_id_fkey;
INSERT INTO {{schema}}.jobs_by_state
  SELECT * FROM {{schema}}.jobs WHERE status IN ('queued', 'retrying')
  UNION ALL SELECT * FROM {{schema}}.jobs WHERE status = 'running'
  UNION ALL SELECT * FROM {{schema}}.jobs WHERE status = 'waiting'
  UNION ALL SELECT * FROM {{schema}}.jobs WHERE status = 'sleeping'
  UNION ALL SELECT * FROM {{schema}}.jobs WHERE status = 'dead'
  UNION ALL SELECT * FROM {{schema}}.jobs
            WHERE status IN ('succeeded', 'cancelled') AND finished_at >= (SELECT cutoff FROM {{schema}}.job_history_copy);
-- The keys of every live and dead job, which the copy may have missed
-- (a job inserted with an id the cursor had passed).
INSERT INTO {{schema}}.job_keys (tenant, idempotency_key, job_id)
  SELECT tenant, idempotency_key, id FROM {{schema}}.jobs_live WHERE idempotency_key IS NOT NULL
  UNION ALL SELECT tenant, idempotency_key, id FROM {{schema}}.jobs_dead WHERE idempotency_key IS NOT NULL
  ON CONFLICT DO NOTHING;
DROP TABLE {{schema}}.jobs CASCADE;
DROP TABLE {{schema}}.job_history_copy, {{schema}}.job_history_copy_dirty;
ALTER TABLE {{schema}}.jobs_by_state RENAME TO jobs;

-- Each partition has the indexes its states need, under the names the
-- single table had: the live ones only on jobs_live, which is all a claim,
-- a lease or a completion reads; history's on job_history, and so on
-- every day of it. Only the idempotency key's is on the parent, as a key
-- is looked up in every state.
CREATE INDEX jobs_ready_idx ON {{schema}}.jobs_live (priority, run_at, id) WHERE status IN ('queued', 'retrying');
CREATE INDEX jobs_ready_by_queue_idx ON {{schema}}.jobs_live (queue, priority, run_at, id) WHERE status IN ('queued', 'retrying');
CREATE INDEX jobs_ready_by_limit_key_idx ON {{schema}}.jobs_live (queue, limit_key, priority, run_at, id)
  WHERE status IN ('queued', 'retrying') AND limit_key IS NOT NULL;
CREATE INDEX jobs_running_lease_idx ON {{schema}}.jobs_live (lease_expires_at) WHERE status = 'running';
CREATE INDEX jobs_running_by_limit_key_idx ON {{schema}}.jobs_live (queue, limit_key)
  WHERE status = 'running' AND limit_key IS NOT NULL;
CREATE INDEX jobs_waiting_idx ON {{schema}}.jobs_live (queue) WHERE status = 'waiting';
CREATE INDEX jobs_sleeping_idx ON {{schema}}.jobs_live (run_at) WHERE status = 'sleeping';
CREATE INDEX jobs_by_queue_state_tenant_idx ON {{schema}}.jobs_live (queue, status, tenant)
  WHERE status IN ('waiting', 'running', 'sleeping');
CREATE UNIQUE INDEX jobs_unique_key_idx ON {{schema}}.jobs_live (tenant, unique_key) WHERE unique_key IS NOT NULL;
-- Dead jobs in id order: jobs_dead_pkey; and by queue, in id order.
CREATE INDEX jobs_dead_by_queue_idx ON {{schema}}.jobs_dead (queue, id);
CREATE INDEX job_history_id_idx ON {{schema}}.job_history (id);
CREATE INDEX jobs_finished_prune_idx ON {{schema}}.job_history (finished_at);
CREATE INDEX jobs_finished_by_kind_idx ON {{schema}}.job_history (kind, finished_at);
CREATE INDEX job_history_by_queue_state_tenant_idx ON {{schema}}.job_history (queue, status, tenant);
CREATE INDEX jobs_idempotency_key_idx ON {{schema}}.jobs (tenant, idempotency_key) WHERE idempotency_key IS NOT NULL;

-- Autovacuum analyzes partitions, never their parent, so the statistics of
-- the columns that counts combine are kept per partition (history's by
-- job_history_extend, for each day), named <partition>_<columns>_stats:
-- the overviews read them by that ending (sql/queues.ts).
CREATE STATISTICS {{schema}}.jobs_live_queue_status_stats (mcv) ON queue, status FROM {{schema}}.jobs_live;
CREATE STATISTICS {{schema}}.jobs_live_kind_status_stats (mcv) ON kind, status FROM {{schema}}.jobs_live;
CREATE STATISTICS {{schema}}.jobs_live_tenant_queue_status_stats (mcv) ON tenant, queue, status FROM {{schema}}.jobs_live;
CREATE STATISTICS {{schema}}.jobs_dead_queue_status_stats (mcv) ON queue, status FROM {{schema}}.jobs_dead;
CREATE STATISTICS {{schema}}.jobs_dead_tenant_queue_status_stats (mcv) ON tenant, queue, status FROM {{schema}}.jobs_dead;

-- Migration 026's vacuum settings, now where the updates are.
ALTER TABLE {{schema}}.jobs_live SET (
  autovacuum_vacuum_scale_factor = 0,
  autovacuum_vacuum_threshold = 10000,
  autovacuum_vacuum_cost_delay = 0,
  autovacuum_analyze_scale_factor = 0.01
);

-- Replaced by jobs_forget and its trigger jobs_deleted.
DROP FUNCTION IF EXISTS {{schema}}.jobs_delete_executions();
DROP FUNCTION IF EXISTS {{schema}}.jobs_delete_steps();
DROP FUNCTION IF EXISTS {{schema}}.jobs_delete_dependencies();

-- The table's triggers and the views over it went with the old table:
-- migrate installs every routine again.
DELETE FROM {{schema}}.routines;
