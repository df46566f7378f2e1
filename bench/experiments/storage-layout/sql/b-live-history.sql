-- Variant B: live + history. `jobs_live` holds only unfinished jobs
-- (waiting, queued, running, retrying, sleeping). The statement that ends a
-- job's last attempt deletes it from jobs_live and inserts it, with its
-- attempt, into `job_history` and `job_attempts_history`, both partitioned
-- by RANGE on the finished time, one partition a day. Retention drops whole
-- partitions.

-- @schema
CREATE TABLE jobs_live (
  id uuid NOT NULL PRIMARY KEY,
  tenant text NOT NULL,
  queue text NOT NULL,
  kind text NOT NULL,
  payload jsonb NOT NULL,
  priority smallint NOT NULL DEFAULT 0,
  status text NOT NULL DEFAULT 'queued'
    CHECK (status IN ('waiting', 'queued', 'running', 'retrying', 'sleeping')),
  attempts integer NOT NULL DEFAULT 0,
  max_attempts integer NOT NULL,
  run_at timestamptz NOT NULL DEFAULT now(),
  locked_by text,
  current_execution_id uuid,
  lease_expires_at timestamptz,
  last_error jsonb,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  started_at timestamptz
);
CREATE INDEX jobs_live_ready_idx ON jobs_live (priority, run_at, id) WHERE status IN ('queued', 'retrying');
CREATE INDEX jobs_live_ready_by_queue_idx ON jobs_live (queue, priority, run_at, id) WHERE status IN ('queued', 'retrying');
CREATE INDEX jobs_live_running_lease_idx ON jobs_live (lease_expires_at) WHERE status = 'running';
CREATE INDEX jobs_live_sleeping_idx ON jobs_live (run_at) WHERE status = 'sleeping';
CREATE INDEX jobs_live_waiting_idx ON jobs_live (queue) WHERE status = 'waiting';
CREATE INDEX jobs_live_by_queue_state_tenant_idx ON jobs_live (queue, status, tenant)
  WHERE status IN ('waiting', 'running', 'sleeping');

-- Finished jobs. No primary key: a unique index of a partitioned table must
-- hold the partition key, and the job id is unique already (it left
-- jobs_live once). Looked up by id, listed by kind and by queue and state.
CREATE TABLE job_history (
  id uuid NOT NULL,
  tenant text NOT NULL,
  queue text NOT NULL,
  kind text NOT NULL,
  payload jsonb NOT NULL,
  priority smallint NOT NULL,
  status text NOT NULL CHECK (status IN ('succeeded', 'cancelled', 'dead')),
  attempts integer NOT NULL,
  max_attempts integer NOT NULL,
  run_at timestamptz NOT NULL,
  last_error jsonb,
  result jsonb,
  created_at timestamptz NOT NULL,
  started_at timestamptz,
  finished_at timestamptz NOT NULL
) PARTITION BY RANGE (finished_at);
CREATE INDEX job_history_id_idx ON job_history (id);
CREATE INDEX job_history_by_kind_idx ON job_history (kind, finished_at);
CREATE INDEX job_history_by_queue_state_tenant_idx ON job_history (queue, status, tenant);

CREATE TABLE job_attempts_history (
  id uuid NOT NULL,
  job_id uuid NOT NULL,
  attempt integer NOT NULL,
  worker_id text NOT NULL,
  started_at timestamptz NOT NULL,
  finished_at timestamptz NOT NULL,
  outcome text NOT NULL,
  error jsonb
) PARTITION BY RANGE (finished_at);
CREATE INDEX job_attempts_history_id_idx ON job_attempts_history (id);
CREATE INDEX job_attempts_history_job_idx ON job_attempts_history (job_id, started_at);

-- Daily partitions from yesterday to three days ahead (UTC); a real
-- deployment makes them ahead of time from its maintenance loop.
DO $$
DECLARE d date;
BEGIN
  FOR d IN SELECT generate_series(current_date - 1, current_date + 3, interval '1 day')::date LOOP
    EXECUTE format('CREATE TABLE %I PARTITION OF job_history FOR VALUES FROM (%L) TO (%L)',
                   'job_history_p' || to_char(d, 'YYYYMMDD'), d, d + 1);
    EXECUTE format('CREATE TABLE %I PARTITION OF job_attempts_history FOR VALUES FROM (%L) TO (%L) WITH (fillfactor = 100)',
                   'job_attempts_history_p' || to_char(d, 'YYYYMMDD'), d, d + 1);
  END LOOP;
END $$;

-- @insert
-- $1 job ids uuid[]
/* exp:insert */
INSERT INTO jobs_live (id, tenant, queue, kind, payload, priority, max_attempts)
SELECT f.id, 'default', 'q' || (f.n % 4), 'send-email',
       jsonb_build_object('to', 'user' || f.n || '@example.com', 'subject', 'Your order has shipped', 'order', f.n),
       0, 3
FROM unnest($1::uuid[]) WITH ORDINALITY AS f(id, n)

-- @claim
-- $1 worker id, $2 limit, $3 fresh execution ids uuid[]
/* exp:claim */
WITH claimable AS (
  SELECT id FROM jobs_live
  WHERE status IN ('queued', 'retrying') AND run_at <= now()
  ORDER BY priority, run_at, id
  LIMIT $2
  FOR UPDATE SKIP LOCKED
), claimed AS (
  UPDATE jobs_live AS j SET
    status = 'running', attempts = j.attempts + 1, locked_by = $1,
    current_execution_id = fresh.execution_id,
    lease_expires_at = now() + interval '30 seconds', started_at = now(), updated_at = now()
  FROM unnest(ARRAY(SELECT id FROM claimable), $3::uuid[]) AS fresh(id, execution_id)
  WHERE j.id = ANY(ARRAY(SELECT id FROM claimable)) AND j.id = fresh.id
  RETURNING j.id, j.current_execution_id AS execution_id
)
SELECT id, execution_id FROM claimed

-- @complete
-- $1 job id, $2 execution id, $3 result (json text), $4 worker id
-- One statement: the fenced DELETE from jobs_live feeds both history inserts.
/* exp:complete */
WITH done AS (
  DELETE FROM jobs_live WHERE id = $1 AND current_execution_id = $2
  RETURNING *
), moved AS (
  INSERT INTO job_history (id, tenant, queue, kind, payload, priority, status, attempts, max_attempts,
                           run_at, last_error, result, created_at, started_at, finished_at)
  SELECT id, tenant, queue, kind, payload, priority, 'succeeded', attempts, max_attempts,
         run_at, last_error, $3::jsonb, created_at, started_at, now()
  FROM done
), recorded AS (
  INSERT INTO job_attempts_history (id, job_id, attempt, worker_id, started_at, finished_at, outcome)
  SELECT $2, id, attempts, $4::text, started_at, now(), 'succeeded' FROM done
)
SELECT count(*)::int AS n FROM done

-- @retention
-- $1 cutoff (timestamptz): drops the day partitions that end before it.
/* exp:retention */
SELECT drop_history_before($1::timestamptz) AS n
