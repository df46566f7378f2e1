-- Variant C: like B (live + history partitioned by day), but a finished
-- job's attempts are a jsonb array on its history row, not rows of a table
-- of their own. Attempts that ended without finishing the job (retries) wait
-- in jobs_live.past_attempts, appended by the statement that ends them (not
-- exercised here: every job succeeds on its first attempt).

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
  started_at timestamptz,
  past_attempts jsonb
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
  finished_at timestamptz NOT NULL,
  attempt_log jsonb NOT NULL
) PARTITION BY RANGE (finished_at);
CREATE INDEX job_history_id_idx ON job_history (id);
CREATE INDEX job_history_by_kind_idx ON job_history (kind, finished_at);
CREATE INDEX job_history_by_queue_state_tenant_idx ON job_history (queue, status, tenant);

-- Daily partitions from yesterday to three days ahead (UTC); a real
-- deployment makes them ahead of time from its maintenance loop.
DO $$
DECLARE d date;
BEGIN
  FOR d IN SELECT generate_series(current_date - 1, current_date + 3, interval '1 day')::date LOOP
    EXECUTE format('CREATE TABLE %I PARTITION OF job_history FOR VALUES FROM (%L) TO (%L)',
                   'job_history_p' || to_char(d, 'YYYYMMDD'), d, d + 1);
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
-- One statement: the fenced DELETE from jobs_live feeds the history insert,
-- which appends the ending attempt to the ones the live row carried.
/* exp:complete */
WITH done AS (
  DELETE FROM jobs_live WHERE id = $1 AND current_execution_id = $2
  RETURNING *
), moved AS (
  INSERT INTO job_history (id, tenant, queue, kind, payload, priority, status, attempts, max_attempts,
                           run_at, last_error, result, created_at, started_at, finished_at, attempt_log)
  SELECT id, tenant, queue, kind, payload, priority, 'succeeded', attempts, max_attempts,
         run_at, last_error, $3::jsonb, created_at, started_at, now(),
         coalesce(past_attempts, '[]'::jsonb) || jsonb_build_array(jsonb_build_object(
           'executionId', $2::uuid, 'attempt', attempts, 'workerId', $4::text, 'startedAt', started_at,
           'finishedAt', now(), 'outcome', 'succeeded'))
  FROM done
  RETURNING 1
)
SELECT count(*)::int AS n FROM moved

-- @retention
-- $1 cutoff (timestamptz): drops the day partitions that end before it.
/* exp:retention */
SELECT drop_history_before($1::timestamptz) AS n
