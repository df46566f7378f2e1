-- Which batch each attempt of a batch handler ran in, and the batch's size
-- (worker/batch-run.ts): one row per job of a batch, written in one
-- statement when the batch starts. Deleted with its job (jobs_delete_steps).
CREATE TABLE IF NOT EXISTS {{schema}}.job_batch_members (
  job_id uuid NOT NULL,
  execution_id uuid NOT NULL,
  batch_id uuid NOT NULL,
  batch_size integer NOT NULL,
  started_at timestamptz NOT NULL DEFAULT now(),
  CONSTRAINT job_batch_members_pkey PRIMARY KEY (job_id, execution_id),
  CONSTRAINT job_batch_members_size_positive CHECK (batch_size >= 1)
);
