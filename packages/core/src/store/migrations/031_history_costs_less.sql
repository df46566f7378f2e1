-- What a job's success writes, cut to what pays for itself.
--
-- The jobs table and its partitions are locked first, parent first, in the
-- order every statement on them takes its locks: a worker's statement waits
-- for the migration, never deadlocks with it.
LOCK TABLE {{schema}}.jobs IN ACCESS EXCLUSIVE MODE;

-- Running jobs leave the per-queue counts index: a running job is counted
-- through jobs_running_lease_idx, whose entries are bounded by the fleet's
-- concurrency, so a claim writes two index entries (the primary key and the
-- lease) instead of three.
CREATE INDEX jobs_by_queue_state_tenant_unclaimed_idx ON {{schema}}.jobs_live (queue, status, tenant)
  WHERE status IN ('waiting', 'sleeping');
DROP INDEX {{schema}}.jobs_by_queue_state_tenant_idx;
ALTER INDEX {{schema}}.jobs_by_queue_state_tenant_unclaimed_idx RENAME TO jobs_by_queue_state_tenant_idx;

-- History is partitioned by day of finished_at: a day is pruned by dropping
-- it, and the rows outside the days are found per kind through
-- jobs_finished_by_kind_idx, so an index on finished_at alone is redundant.
DROP INDEX {{schema}}.jobs_finished_prune_idx;

-- A succeeded job's history row keeps the execution id and the worker of
-- the attempt that ended it: that attempt's record, so a success writes no
-- job_executions row (routines/job-attempts.ts reads it from the row). Only
-- a running job holds a lease. Every row meets this already (it is weaker
-- than the rule it replaces), so it is added without a scan of history.
ALTER TABLE {{schema}}.jobs DROP CONSTRAINT jobs_running_owned;
ALTER TABLE {{schema}}.jobs ADD CONSTRAINT jobs_running_owned CHECK (
  CASE status
    WHEN 'running' THEN num_nonnulls(locked_by, current_execution_id, lease_expires_at) = 3
    WHEN 'succeeded' THEN lease_expires_at IS NULL AND num_nonnulls(locked_by, current_execution_id) IN (0, 2)
    ELSE num_nonnulls(locked_by, current_execution_id, lease_expires_at) = 0
  END) NOT VALID;
