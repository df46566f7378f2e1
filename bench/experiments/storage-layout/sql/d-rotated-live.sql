-- Variant D (a sketch): B with its live table rotated. jobs_live is LIST
-- partitioned on a segment number `seg` into a ring of four segments. New
-- jobs go into the current insert segment; the runner moves to the next one
-- every SEGMENT_JOBS jobs (a real system would rotate on time or on size,
-- from its maintenance loop). A segment whose jobs have all left (finished,
-- moved to history) is emptied by TRUNCATE, which needs no vacuum and is not
-- held back by an old snapshot, so the dead versions and dead index entries
-- that a claim walks over are bounded by one segment's worth of jobs, even
-- under a held xmin. History as in B. This is the queue-table rotation idea
-- (insert into the current table, TRUNCATE a drained one), applied to the
-- live table; it is not a port of any other project's design.

-- @schema
CREATE TABLE jobs_live (
  id uuid NOT NULL,
  seg smallint NOT NULL,
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
  PRIMARY KEY (id, seg)
) PARTITION BY LIST (seg);
CREATE TABLE jobs_live_s0 PARTITION OF jobs_live FOR VALUES IN (0);
CREATE TABLE jobs_live_s1 PARTITION OF jobs_live FOR VALUES IN (1);
CREATE TABLE jobs_live_s2 PARTITION OF jobs_live FOR VALUES IN (2);
CREATE TABLE jobs_live_s3 PARTITION OF jobs_live FOR VALUES IN (3);
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

-- Rotation, called by the runner every few hundred jobs with the current
-- insert segment. TRUNCATEs every other segment that has pages but no
-- visible row. When $1 is a segment just switched to and it still holds
-- jobs (a long-running or retrying job), they are first moved to the
-- previous insert segment, so the new one starts empty.
CREATE FUNCTION rotate_segments(insert_seg integer, switching boolean) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE s integer; part text; n integer := 0; has_rows boolean;
BEGIN
  IF switching THEN
    part := 'jobs_live_s' || insert_seg;
    EXECUTE format('SELECT EXISTS (SELECT 1 FROM %I)', part) INTO has_rows;
    IF has_rows THEN
      -- A cross-partition UPDATE moves them (a delete here, an insert there).
      UPDATE jobs_live SET seg = (insert_seg + 3) % 4 WHERE seg = insert_seg;
    END IF;
  END IF;
  FOR s IN 0..3 LOOP
    part := 'jobs_live_s' || s;
    CONTINUE WHEN s = insert_seg AND NOT switching;
    IF pg_relation_size(part::regclass) > 0 THEN
      EXECUTE format('SELECT EXISTS (SELECT 1 FROM %I)', part) INTO has_rows;
      IF NOT has_rows THEN
        EXECUTE format('TRUNCATE %I', part);
        n := n + 1;
      END IF;
    END IF;
  END LOOP;
  RETURN n;
END $$;

-- @insert
-- $1 job ids uuid[], $2 insert segment
/* exp:insert */
INSERT INTO jobs_live (id, seg, tenant, queue, kind, payload, priority, max_attempts)
SELECT f.id, $2::smallint, 'default', 'q' || (f.n % 4), 'send-email',
       jsonb_build_object('to', 'user' || f.n || '@example.com', 'subject', 'Your order has shipped', 'order', f.n),
       0, 3
FROM unnest($1::uuid[]) WITH ORDINALITY AS f(id, n)

-- @claim
-- $1 worker id, $2 limit, $3 fresh execution ids uuid[]
/* exp:claim */
WITH claimable AS (
  SELECT id, seg FROM jobs_live
  WHERE status IN ('queued', 'retrying') AND run_at <= now()
  ORDER BY priority, run_at, id
  LIMIT $2
  FOR UPDATE SKIP LOCKED
), claimed AS (
  UPDATE jobs_live AS j SET
    status = 'running', attempts = j.attempts + 1, locked_by = $1,
    current_execution_id = fresh.execution_id,
    lease_expires_at = now() + interval '30 seconds', started_at = now(), updated_at = now()
  FROM unnest(ARRAY(SELECT id FROM claimable), ARRAY(SELECT seg FROM claimable), $3::uuid[]) AS fresh(id, seg, execution_id)
  WHERE j.id = ANY(ARRAY(SELECT id FROM claimable)) AND j.id = fresh.id AND j.seg = fresh.seg
  RETURNING j.id, j.current_execution_id AS execution_id, j.seg
)
SELECT id, execution_id, seg FROM claimed

-- @complete
-- $1 job id, $2 execution id, $3 result (json text), $4 worker id, $5 segment
-- One statement: the fenced DELETE from jobs_live feeds both history inserts.
/* exp:complete */
WITH done AS (
  DELETE FROM jobs_live WHERE id = $1 AND seg = $5::smallint AND current_execution_id = $2
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

-- @rotate
-- $1 current insert segment, $2 true when the runner just switched to it
/* exp:rotate */
SELECT rotate_segments($1::integer, $2::boolean) AS n
