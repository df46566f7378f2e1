-- What follows a job's end is done by the statement that ends it
-- (store/sql/job-moves.ts, routines/jobs-ended.ts), no longer by triggers on
-- the tables of ended jobs; the triggers and functions that did it go.
--
-- job_ends: the ends (dir 1) and returns from an end (dir -1) of jobs with
-- dependents, recorded by the statements that move them, and released as
-- their transaction commits by the deferred trigger job_ends_release: every
-- end a transaction recorded, once, with the dependents locked in id order,
-- so two transactions that share dependents wait for each other instead of
-- deadlocking, and a batch of completions pays for one release. Rows live
-- only inside their own transaction: the release deletes them, a rollback
-- (or a rolled-back savepoint) takes them away. Nothing in it outlives a
-- transaction, so it is not written to the WAL.
CREATE UNLOGGED TABLE {{schema}}.job_ends (
  tx      xid8 NOT NULL DEFAULT pg_current_xact_id(),
  job_id  uuid NOT NULL,
  dir     integer NOT NULL CHECK (dir IN (1, -1)),
  bad     boolean NOT NULL
);
CREATE INDEX job_ends_tx_idx ON {{schema}}.job_ends (tx);

DROP TRIGGER IF EXISTS jobs_notify_cancel ON {{schema}}.jobs;
DROP TRIGGER IF EXISTS jobs_notify_ended ON {{schema}}.job_history;
DROP TRIGGER IF EXISTS jobs_notify_ended ON {{schema}}.jobs_dead;
DROP TRIGGER IF EXISTS jobs_notify_ready ON {{schema}}.jobs;
DROP TRIGGER IF EXISTS jobs_notify_requeued ON {{schema}}.job_history;
DROP TRIGGER IF EXISTS jobs_notify_requeued ON {{schema}}.jobs_dead;
DROP TRIGGER IF EXISTS jobs_notify_requeued ON {{schema}}.jobs_live;
DROP TRIGGER IF EXISTS jobs_release_dependents ON {{schema}}.job_history;
DROP TRIGGER IF EXISTS jobs_release_dependents ON {{schema}}.jobs_dead;
DROP TRIGGER IF EXISTS jobs_release_dependents_at_commit ON {{schema}}.job_history;
DROP TRIGGER IF EXISTS jobs_release_dependents_at_commit ON {{schema}}.jobs_dead;
DROP TRIGGER IF EXISTS jobs_release_dependents_at_commit_returned ON {{schema}}.job_history;
DROP TRIGGER IF EXISTS jobs_release_dependents_at_commit_returned ON {{schema}}.jobs_dead;
DROP TRIGGER IF EXISTS jobs_release_dependents_returned ON {{schema}}.job_history;
DROP TRIGGER IF EXISTS jobs_release_dependents_returned ON {{schema}}.jobs_dead;
DROP TRIGGER IF EXISTS jobs_release_unique_key ON {{schema}}.jobs;
DROP FUNCTION IF EXISTS {{schema}}.jobs_notify_cancel();
DROP FUNCTION IF EXISTS {{schema}}.jobs_notify_ended();
DROP FUNCTION IF EXISTS {{schema}}.jobs_notify_requeued();
DROP FUNCTION IF EXISTS {{schema}}.jobs_release_dependents();
DROP FUNCTION IF EXISTS {{schema}}.jobs_release_recorded();
DROP FUNCTION IF EXISTS {{schema}}.jobs_release_unique_key();
DELETE FROM {{schema}}.routines WHERE name IN ('jobs_notify_cancel', 'jobs_notify_ended', 'jobs_notify_requeued',
  'jobs_release_dependents', 'jobs_release_recorded', 'jobs_release_unique_key');
