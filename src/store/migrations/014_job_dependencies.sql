-- Job dependencies, flows and batches.
--
-- A job with dependencies is inserted `waiting`. Each dependency is an edge
-- (job_dependencies) with a policy for when that dependency ends other than
-- succeeded: `fail` (the dependent is dead-lettered), `cancel` (it is
-- cancelled) or `run` (it runs anyway). job_dependency_state keeps, per
-- dependent, how many of its dependencies have not ended (pending), how many
-- ended without success (failed), and how many of those block it (blocking:
-- policy fail or cancel).
--
-- The counts change only in the transaction that moves a dependency into or
-- out of an ending state (succeeded, cancelled, dead), at its commit (the
-- triggers below): the statement that ends a job is fenced on the attempt's
-- execution id, so a stale worker's write ends nothing and releases nothing.
-- Each change takes the dependents' state row locks first, in id order, so
-- two dependencies ending at once in two transactions are counted one after
-- the other, never both missed. Releasing reads and writes only the
-- dependents, by key: no scan of waiting jobs, no polling. The claim never
-- reads `waiting` jobs (its indexes are partial on queued and retrying), so
-- its plans are unchanged.

ALTER TABLE {{schema}}.jobs
  -- True once another job depends on this one; the trigger's WHEN reads it,
  -- so ending an ordinary job costs one boolean test.
  ADD COLUMN has_dependents boolean NOT NULL DEFAULT false,
  DROP CONSTRAINT jobs_status_valid,
  ADD CONSTRAINT jobs_status_valid CHECK (
    status = ANY ('{waiting,queued,running,retrying,succeeded,cancelled,dead}'::text[])) NOT VALID;

DO $$
BEGIN
  ALTER TABLE {{schema}}.jobs VALIDATE CONSTRAINT jobs_status_valid;
END
$$;

-- Jobs waiting on dependencies, by queue, for the depth gauge and listings;
-- as small as the number of waiting jobs.
CREATE INDEX jobs_waiting_idx ON {{schema}}.jobs (queue) WHERE status = 'waiting';

ALTER TABLE {{schema}}.dead_letter_jobs
  DROP CONSTRAINT dead_letter_jobs_reason_valid,
  ADD CONSTRAINT dead_letter_jobs_reason_valid CHECK (
    reason = ANY ('{attempts_exhausted,permanent_error,dependency_failed}'::text[]));

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
-- Retention finds old flows oldest first (flowPruneEmpty).
CREATE INDEX flows_created_idx ON {{schema}}.flows (created_at);

-- The jobs of a flow, each under the name (node) the flow gave it.
CREATE TABLE {{schema}}.flow_jobs (
  job_id   uuid PRIMARY KEY,
  flow_id  uuid NOT NULL,
  node     text NOT NULL,
  CONSTRAINT flow_jobs_node_bounded CHECK (length(node) BETWEEN 1 AND 255)
);
CREATE UNIQUE INDEX flow_jobs_flow_node_idx ON {{schema}}.flow_jobs (flow_id, node);

-- job_id waits for depends_on.
CREATE TABLE {{schema}}.job_dependencies (
  depends_on  uuid NOT NULL,
  job_id      uuid NOT NULL,
  on_failure  text NOT NULL,
  PRIMARY KEY (depends_on, job_id),
  CONSTRAINT job_dependencies_policy_valid CHECK (on_failure = ANY ('{fail,cancel,run}'::text[])),
  CONSTRAINT job_dependencies_not_self CHECK (depends_on <> job_id)
);
CREATE INDEX job_dependencies_job_idx ON {{schema}}.job_dependencies (job_id, depends_on);

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

-- Settle dependents whose counts changed: move each that has not started
-- (started_at IS NULL) to the state its counts call for, and return the ones
-- whose ending changed (they ended, or came back from an end) and have
-- dependents of their own, for the next round. Only jobs that wait, are
-- queued, or were ended by their dependencies move:
--
--   blocking > 0                       → dead (blocker's policy fail) or cancelled (cancel)
--   pending > 0                        → waiting (a requeued dependency re-arms it)
--   none pending, run_if = any_failed,
--   none failed                        → cancelled
--   otherwise                          → queued
--
-- A job that has started is never moved: it ran with what its dependencies
-- were then. A job without a state row (released by a requeue of its own,
-- see deadLetterRequeue) is never moved either. Rows are locked in id order.
CREATE FUNCTION {{schema}}.job_dependents_settle(p_jobs uuid[], OUT r_ids uuid[], OUT r_dirs integer[], OUT r_bad boolean[])
LANGUAGE plpgsql
-- Every read names its rows by key; a whole-table scan is never the cheaper guess.
SET enable_seqscan = off AS $$
BEGIN
  WITH current AS (
    SELECT j.id, j.status
    FROM {{schema}}.jobs AS j
    WHERE j.id = ANY(p_jobs) AND j.started_at IS NULL
    ORDER BY j.id
    FOR UPDATE OF j
  ), decided AS (
    SELECT c.id, c.status AS old_status, s.blocker, blocker.kind AS blocker_kind, blocker.status AS blocker_status,
      CASE
        WHEN NOT (c.status IN ('waiting', 'queued') OR (c.status IN ('dead', 'cancelled') AND s.ended_by_dependency))
          THEN c.status
        WHEN s.blocking > 0 THEN
          CASE WHEN c.status IN ('dead', 'cancelled') THEN c.status
               WHEN edge.on_failure = 'fail' THEN 'dead' ELSE 'cancelled' END
        WHEN s.pending > 0 THEN 'waiting'
        WHEN s.run_if = 'any_failed' AND s.failed = 0 THEN 'cancelled'
        ELSE 'queued'
      END AS new_status
    FROM current AS c
    JOIN {{schema}}.job_dependency_state AS s ON s.job_id = c.id AND s.job_id = ANY(p_jobs)
    LEFT JOIN {{schema}}.job_dependencies AS edge ON edge.depends_on = s.blocker AND edge.job_id = c.id AND edge.job_id = ANY(p_jobs)
    LEFT JOIN {{schema}}.jobs AS blocker ON blocker.id = s.blocker
  ), moved AS (
    UPDATE {{schema}}.jobs AS j SET
      status = d.new_status,
      run_at = CASE WHEN d.new_status = 'queued' THEN greatest(j.run_at, now()) ELSE j.run_at END,
      finished_at = CASE WHEN d.new_status IN ('dead', 'cancelled') THEN now() END,
      last_error = CASE
        WHEN d.new_status IN ('dead', 'cancelled') AND d.blocker IS NOT NULL THEN jsonb_build_object(
          'name', 'DependencyFailed',
          'message', format('dependency %s (%s) ended %s', d.blocker, d.blocker_kind, d.blocker_status),
          'dependencyId', d.blocker)
        WHEN d.new_status = 'cancelled' THEN jsonb_build_object(
          'name', 'NoDependencyFailed',
          'message', 'every dependency succeeded, and this job runs only when one fails')
        ELSE NULL END,
      updated_at = now()
    FROM decided AS d
    WHERE j.id = d.id AND j.id = ANY(p_jobs) AND d.new_status <> d.old_status
    RETURNING j.id, j.tenant, j.queue, j.kind, j.payload, j.attempts, j.max_attempts, j.last_error,
              j.status, d.old_status, j.has_dependents
  ), buried AS (
    INSERT INTO {{schema}}.dead_letter_jobs
      (id, job_id, tenant, queue, kind, payload, attempts, max_attempts, reason, last_error, history)
    SELECT {{schema}}.uuid_v7(), m.id, m.tenant, m.queue, m.kind, m.payload, m.attempts, m.max_attempts,
           'dependency_failed', m.last_error, '[]'::jsonb
    FROM moved AS m WHERE m.status = 'dead'
  ), unburied AS (
    DELETE FROM {{schema}}.dead_letter_jobs
    WHERE job_id = ANY(ARRAY(SELECT id FROM moved WHERE old_status = 'dead'))
  ), flagged AS (
    UPDATE {{schema}}.job_dependency_state AS s SET ended_by_dependency = m.status IN ('dead', 'cancelled')
    FROM moved AS m
    WHERE s.job_id = ANY(ARRAY(SELECT id FROM moved)) AND s.job_id = m.id
      AND s.ended_by_dependency <> (m.status IN ('dead', 'cancelled'))
  )
  SELECT coalesce(array_agg(m.id ORDER BY m.id), '{}'),
         coalesce(array_agg(CASE WHEN m.status IN ('cancelled', 'dead') THEN 1 ELSE -1 END ORDER BY m.id), '{}'),
         coalesce(array_agg(true ORDER BY m.id), '{}')
    INTO r_ids, r_dirs, r_bad
  FROM moved AS m
  WHERE m.has_dependents
    AND (m.status IN ('cancelled', 'dead')) <> (m.old_status IN ('cancelled', 'dead'));
END
$$;

-- Count the ends (dir 1) and the returns from an end (dir -1) of jobs
-- p_ids into their dependents' states, then settle those dependents, and
-- repeat for the dependents whose own ending changed, until nothing moves.
-- p_bad says whether the end was other than success. One round per level
-- of the graph, each set-based: a chain ending at once costs its length in
-- rounds, not in nested trigger calls. While it runs, the trigger below
-- leaves the rows it moves to it (conveyor.settling).
CREATE FUNCTION {{schema}}.job_dependents_release(p_ids uuid[], p_dirs integer[], p_bad boolean[])
RETURNS void LANGUAGE plpgsql SET enable_seqscan = off AS $$
DECLARE
  dependents uuid[];
  outer_call boolean := coalesce(current_setting('conveyor.settling', true), '') <> 'on';
BEGIN
  IF outer_call THEN PERFORM set_config('conveyor.settling', 'on', true); END IF;
  WHILE cardinality(p_ids) > 0 LOOP
    dependents := ARRAY(
      SELECT DISTINCT d.job_id FROM {{schema}}.job_dependencies AS d WHERE d.depends_on = ANY(p_ids) ORDER BY 1);
    EXIT WHEN cardinality(dependents) = 0;
    PERFORM 1 FROM {{schema}}.job_dependency_state AS s
      WHERE s.job_id = ANY(dependents) ORDER BY s.job_id FOR UPDATE;
    UPDATE {{schema}}.job_dependency_state AS s SET
      pending = s.pending - delta.ended,
      failed = s.failed + delta.failed,
      blocking = s.blocking + delta.blocking,
      blocker = CASE
        WHEN s.blocking + delta.blocking = 0 THEN NULL
        WHEN s.blocker IS NOT NULL AND NOT s.blocker = ANY(delta.returned) THEN s.blocker
        WHEN delta.new_blocker IS NOT NULL THEN delta.new_blocker
        -- The named blocker came back; name another that still blocks.
        ELSE (SELECT d.depends_on FROM {{schema}}.job_dependencies AS d
              JOIN {{schema}}.jobs AS p ON p.id = d.depends_on
              WHERE d.job_id = s.job_id AND d.on_failure <> 'run' AND p.status IN ('cancelled', 'dead')
              ORDER BY 1 LIMIT 1)
      END
    FROM (
      SELECT d.job_id,
             sum(e.dir) AS ended,
             coalesce(sum(e.dir) FILTER (WHERE e.bad), 0) AS failed,
             coalesce(sum(e.dir) FILTER (WHERE e.bad AND d.on_failure <> 'run'), 0) AS blocking,
             (array_agg(e.id ORDER BY e.id) FILTER (WHERE e.dir = 1 AND e.bad AND d.on_failure <> 'run'))[1] AS new_blocker,
             coalesce(array_agg(e.id) FILTER (WHERE e.dir = -1), '{}') AS returned
      FROM unnest(p_ids, p_dirs, p_bad) AS e(id, dir, bad)
      JOIN {{schema}}.job_dependencies AS d ON d.depends_on = e.id
      GROUP BY d.job_id
    ) AS delta
    WHERE s.job_id = delta.job_id AND s.job_id = ANY(dependents);
    SELECT r_ids, r_dirs, r_bad INTO p_ids, p_dirs, p_bad FROM {{schema}}.job_dependents_settle(dependents);
  END LOOP;
  IF outer_call THEN PERFORM set_config('conveyor.settling', 'off', true); END IF;
END
$$;

-- Settle jobs just inserted with dependencies that had ended before (or one
-- that blocks them had), and release what waits on them in turn.
CREATE FUNCTION {{schema}}.job_dependents_check(p_jobs uuid[]) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  moved record;
  outer_call boolean := coalesce(current_setting('conveyor.settling', true), '') <> 'on';
BEGIN
  IF outer_call THEN PERFORM set_config('conveyor.settling', 'on', true); END IF;
  SELECT * INTO moved FROM {{schema}}.job_dependents_settle(p_jobs);
  PERFORM {{schema}}.job_dependents_release(moved.r_ids, moved.r_dirs, moved.r_bad);
  IF outer_call THEN PERFORM set_config('conveyor.settling', 'off', true); END IF;
END
$$;

-- A job with dependents ended, or came back from its end (a dead job
-- requeued). The row trigger records the event (job id, whether it ended or
-- came back, whether the end was a failure) in a transaction-local setting;
-- the deferred constraint trigger releases everything recorded, once, as
-- the transaction commits: the dependents of every job it ended are counted,
-- locked in id order and settled together, so two transactions that share
-- dependents wait for each other instead of deadlocking, and a batch of
-- completions pays for one release. A rollback, or a rolled-back savepoint,
-- takes its recorded events with it, as it does the setting.
CREATE FUNCTION {{schema}}.jobs_release_dependents() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- Rows the release itself moves are walked by its own loop.
  IF current_setting('conveyor.settling', true) = 'on' THEN
    RETURN NULL;
  END IF;
  PERFORM set_config('conveyor.ended',
    coalesce(current_setting('conveyor.ended', true), '') ||
      NEW.id::text || CASE WHEN NEW.status IN ('succeeded', 'cancelled', 'dead')
                           THEN CASE WHEN NEW.status = 'succeeded' THEN ':1:f,' ELSE ':1:t,' END
                           ELSE CASE WHEN OLD.status = 'succeeded' THEN ':-1:f,' ELSE ':-1:t,' END END,
    true);
  RETURN NULL;
END
$$;

-- Fires for each recorded row at commit; the first call releases every
-- event recorded and clears them, the others find nothing left.
CREATE FUNCTION {{schema}}.jobs_release_recorded() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  recorded text := coalesce(current_setting('conveyor.ended', true), '');
  ids uuid[];
  dirs integer[];
  bad boolean[];
BEGIN
  IF recorded = '' THEN
    RETURN NULL;
  END IF;
  PERFORM set_config('conveyor.ended', '', true);
  SELECT array_agg(split_part(e, ':', 1)::uuid ORDER BY split_part(e, ':', 1)::uuid, ord),
         array_agg(split_part(e, ':', 2)::integer ORDER BY split_part(e, ':', 1)::uuid, ord),
         array_agg(split_part(e, ':', 3) = 't' ORDER BY split_part(e, ':', 1)::uuid, ord)
    INTO ids, dirs, bad
  FROM unnest(string_to_array(rtrim(recorded, ','), ',')) WITH ORDINALITY AS r(e, ord);
  PERFORM {{schema}}.job_dependents_release(ids, dirs, bad);
  RETURN NULL;
END
$$;
CREATE TRIGGER jobs_release_dependents AFTER UPDATE OF status ON {{schema}}.jobs
  FOR EACH ROW WHEN (NEW.has_dependents AND
    (OLD.status IN ('succeeded', 'cancelled', 'dead')) <> (NEW.status IN ('succeeded', 'cancelled', 'dead')))
  EXECUTE FUNCTION {{schema}}.jobs_release_dependents();
CREATE CONSTRAINT TRIGGER jobs_release_dependents_at_commit AFTER UPDATE OF status ON {{schema}}.jobs
  DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW WHEN (NEW.has_dependents AND
    (OLD.status IN ('succeeded', 'cancelled', 'dead')) <> (NEW.status IN ('succeeded', 'cancelled', 'dead')))
  EXECUTE FUNCTION {{schema}}.jobs_release_recorded();


-- Deleting jobs (a prune, a purge, by hand) deletes their edges, counts and
-- flow membership in the same statement, as their executions (migration 008).
CREATE FUNCTION {{schema}}.jobs_delete_dependencies() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM {{schema}}.job_dependencies WHERE depends_on = ANY(ARRAY(SELECT id FROM deleted WHERE has_dependents));
  WITH gone AS (
    DELETE FROM {{schema}}.job_dependency_state WHERE job_id = ANY(ARRAY(SELECT id FROM deleted)) RETURNING job_id
  )
  DELETE FROM {{schema}}.job_dependencies WHERE job_id = ANY(ARRAY(SELECT job_id FROM gone));
  DELETE FROM {{schema}}.flow_jobs WHERE job_id = ANY(ARRAY(SELECT id FROM deleted));
  RETURN NULL;
END
$$;
CREATE TRIGGER jobs_delete_dependencies AFTER DELETE ON {{schema}}.jobs
  REFERENCING OLD TABLE AS deleted FOR EACH STATEMENT EXECUTE FUNCTION {{schema}}.jobs_delete_dependencies();
