-- Bulk actions: one change (retry, cancel, purge, set a priority, move to a
-- queue) applied on the server to every job a filter selects, in batches,
-- each one short transaction (src/store/bulk-action-store.ts).
--
-- One row per operation, and it is the record: who asked, when, with what
-- filter, and how many jobs it touched. Retention never deletes these rows.
-- The walk goes through the matching jobs in id order, between the first
-- and the last that matched at the start; last_job_id is its keyset cursor,
-- advanced in the same transaction as the batch that got there, so a walk
-- resumed by another process starts exactly where the last committed batch
-- ended. A batch writes only while its process owns the
-- operation (owner, renewed lease); a process that died leaves a lease that
-- lapses, and any process running the resume sweep takes the walk over.
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
  -- The keyset cursor: the last job id the walk has passed (done, or found
  -- not to match); null before the first. Set at the start to just before
  -- the first matching job when the jobs could be counted.
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
-- The resume sweep: running operations by lease; as small as the operations running.
CREATE INDEX bulk_actions_running_idx ON {{schema}}.bulk_actions (lease_expires_at) WHERE status = 'running';

-- Dead jobs in id order, for a bulk retry or purge of dead jobs: the walk
-- reads only dead rows, however many other jobs the table holds (100,000
-- dead among 10 million: each batch reads its 500 entries and no other
-- row). Jobs die rarely, so the index costs the hot path next to nothing:
-- claims and completions never write an entry in it. Building it reads the
-- jobs table once, under this migration's lock.
CREATE INDEX jobs_dead_idx ON {{schema}}.jobs (id) WHERE status = 'dead';
