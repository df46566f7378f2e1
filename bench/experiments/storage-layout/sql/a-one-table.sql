-- Variant A: today's shape. Every job lives its whole life in `jobs`;
-- finished rows stay there until retention DELETEs them. Attempts go to
-- `job_executions`, written once by the statement that ends the attempt.
-- The indexes are the ones schema.sql has on jobs that this lifecycle
-- touches (same columns and partial predicates), less the ones on columns
-- this experiment never sets (idempotency/unique/limit keys).

-- @schema
CREATE TABLE jobs (
  id uuid NOT NULL PRIMARY KEY,
  tenant text NOT NULL,
  queue text NOT NULL,
  kind text NOT NULL,
  payload jsonb NOT NULL,
  priority smallint NOT NULL DEFAULT 0,
  status text NOT NULL DEFAULT 'queued'
    CHECK (status IN ('waiting', 'queued', 'running', 'retrying', 'sleeping', 'succeeded', 'cancelled', 'dead')),
  attempts integer NOT NULL DEFAULT 0,
  max_attempts integer NOT NULL,
  run_at timestamptz NOT NULL DEFAULT now(),
  locked_by text,
  current_execution_id uuid,
  lease_expires_at timestamptz,
  last_error jsonb,
  result jsonb,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  started_at timestamptz,
  finished_at timestamptz
);
CREATE INDEX jobs_ready_idx ON jobs (priority, run_at, id) WHERE status IN ('queued', 'retrying');
CREATE INDEX jobs_ready_by_queue_idx ON jobs (queue, priority, run_at, id) WHERE status IN ('queued', 'retrying');
CREATE INDEX jobs_running_lease_idx ON jobs (lease_expires_at) WHERE status = 'running';
CREATE INDEX jobs_sleeping_idx ON jobs (run_at) WHERE status = 'sleeping';
CREATE INDEX jobs_waiting_idx ON jobs (queue) WHERE status = 'waiting';
CREATE INDEX jobs_by_queue_state_tenant_idx ON jobs (queue, status, tenant)
  WHERE status IN ('waiting', 'running', 'sleeping', 'succeeded', 'cancelled', 'dead');
CREATE INDEX jobs_finished_by_kind_idx ON jobs (kind, finished_at) WHERE status IN ('succeeded', 'cancelled');
CREATE INDEX jobs_finished_prune_idx ON jobs (finished_at) WHERE status IN ('succeeded', 'cancelled');

CREATE TABLE job_executions (
  id uuid NOT NULL PRIMARY KEY,
  job_id uuid NOT NULL,
  attempt integer NOT NULL,
  worker_id text NOT NULL,
  started_at timestamptz NOT NULL,
  finished_at timestamptz NOT NULL,
  outcome text NOT NULL,
  error jsonb
) WITH (fillfactor = 100);
CREATE INDEX job_executions_job_idx ON job_executions (job_id, started_at);

-- @insert
-- $1 job ids uuid[]
/* exp:insert */
INSERT INTO jobs (id, tenant, queue, kind, payload, priority, max_attempts)
SELECT f.id, 'default', 'q' || (f.n % 4), 'send-email',
       jsonb_build_object('to', 'user' || f.n || '@example.com', 'subject', 'Your order has shipped', 'order', f.n),
       0, 3
FROM unnest($1::uuid[]) WITH ORDINALITY AS f(id, n)

-- @claim
-- $1 worker id, $2 limit, $3 fresh execution ids uuid[]
/* exp:claim */
WITH claimable AS (
  SELECT id FROM jobs
  WHERE status IN ('queued', 'retrying') AND run_at <= now()
  ORDER BY priority, run_at, id
  LIMIT $2
  FOR UPDATE SKIP LOCKED
), claimed AS (
  UPDATE jobs AS j SET
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
/* exp:complete */
WITH done AS (
  UPDATE jobs AS j SET
    status = 'succeeded', result = $3::jsonb, finished_at = now(), updated_at = now(),
    locked_by = NULL, current_execution_id = NULL, lease_expires_at = NULL
  WHERE j.id = $1 AND j.current_execution_id = $2
  RETURNING j.id, j.attempts, j.started_at
), recorded AS (
  INSERT INTO job_executions (id, job_id, attempt, worker_id, started_at, finished_at, outcome)
  SELECT $2, id, attempts, $4::text, started_at, now(), 'succeeded' FROM done
)
SELECT count(*)::int AS n FROM done

-- @retention
-- $1 finished before (timestamptz). One batch of 1,000, as Conveyor's
-- retention does (jobPruneFinished); executions go with their jobs. The
-- runner repeats it until it returns 0.
/* exp:retention */
WITH target AS (
  SELECT id FROM jobs
  WHERE status IN ('succeeded', 'cancelled') AND finished_at < $1::timestamptz
  ORDER BY finished_at
  LIMIT 1000
  FOR UPDATE SKIP LOCKED
), executions AS (
  DELETE FROM job_executions WHERE job_id = ANY(ARRAY(SELECT id FROM target))
), pruned AS (
  DELETE FROM jobs WHERE id = ANY(ARRAY(SELECT id FROM target)) RETURNING 1
)
SELECT count(*)::int AS n FROM pruned

-- @after-retention
VACUUM jobs, job_executions
