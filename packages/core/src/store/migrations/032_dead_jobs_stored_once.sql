-- A dead job is stored once: its row in jobs_dead is its dead letter.
--
-- Until now a death also wrote a dead_letter_jobs row: a copy of the job's
-- tenant, queue, kind, payload, attempts and last error, a jsonb snapshot
-- of its attempts, and the two things only the letter held, its id and its
-- reason. The row in jobs_dead now carries those two (dead_letter_id,
-- dead_reason); the death's time is the row's finished_at, which every
-- death wrote in the same statement as the letter's dead_at; and the
-- history is read from the job's attempts (job_executions), which a dead
-- job keeps until it is requeued or deleted, as the snapshot was taken
-- from them.
--
-- The jobs table and its partitions are locked first, parent first, in the
-- order every statement on them takes its locks, then the letters. The
-- columns are nullable with no default, so adding them to every partition
-- changes the catalog only; jobs_live and history are neither read nor
-- written. The lock lasts as long as writing each dead job once and
-- indexing jobs_dead. The routines that name dead_letter_jobs are
-- replaced by the same migrate, in the transaction after this one. A
-- statement of a build from before this migration that names it fails from
-- now on (a worker's end of an attempt among them: the job's lease then
-- expires, and a current worker reclaims it).
LOCK TABLE {{schema}}.jobs, {{schema}}.dead_letter_jobs IN ACCESS EXCLUSIVE MODE;

ALTER TABLE {{schema}}.jobs ADD COLUMN dead_letter_id uuid, ADD COLUMN dead_reason text;

-- Each letter onto its dead job: its id, its reason, and its dead_at as
-- the job's finished_at (the same value for every letter Conveyor wrote; a
-- letter written by hand keeps its own time). A letter whose job is not
-- dead (its job requeued by hand) named nothing a reader could act on, and
-- goes with the table.
UPDATE {{schema}}.jobs_dead AS j
SET dead_letter_id = d.id, dead_reason = d.reason, finished_at = d.dead_at
FROM {{schema}}.dead_letter_jobs AS d
WHERE d.job_id = j.id;

-- Only a dead job carries a dead letter, with its id and reason together.
-- Every row meets this (the columns are new, and set above only on dead
-- rows), so it is added without a scan of every partition; new writes are
-- checked all the same.
ALTER TABLE {{schema}}.jobs ADD CONSTRAINT jobs_dead_letter_valid CHECK (
  (dead_letter_id IS NULL) = (dead_reason IS NULL)
  AND (dead_letter_id IS NULL OR status = 'dead')
  AND (dead_reason IS NULL OR dead_reason = ANY ('{attempts_exhausted,permanent_error,dependency_failed}'::text[]))
) NOT VALID;

-- The letters' indexes, now on jobs_dead: by id (inspect, requeue, purge,
-- the admin's list newest first), by tenant and id (a tenant's list), and
-- by the death's time (retention, oldest first).
CREATE UNIQUE INDEX jobs_dead_letter_id_idx ON {{schema}}.jobs_dead (dead_letter_id);
CREATE INDEX jobs_dead_letter_by_tenant_idx ON {{schema}}.jobs_dead (tenant, dead_letter_id);
CREATE INDEX jobs_dead_finished_idx ON {{schema}}.jobs_dead (finished_at);

DROP TABLE {{schema}}.dead_letter_jobs;
