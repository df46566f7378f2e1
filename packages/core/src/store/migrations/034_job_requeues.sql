-- Each time a job was made to run again with fresh attempts, and by what
-- (core/requeues.ts REQUEUE_ACTIONS): a requeue of its dead letter, a bulk
-- retry (with the bulk action), a resume, or a rerun from a step (with the
-- step). Written by the statement that moves the job (store/sql/
-- requeue-fragments.ts), so a row exists exactly when the move committed;
-- read by getJob, in `seq` order, which is the order of the moves (each
-- holds the job's row lock). Deleted with its job (jobs_forget), like its
-- executions and steps.
CREATE TABLE IF NOT EXISTS {{schema}}.job_requeues (
  job_id uuid NOT NULL,
  seq bigint GENERATED ALWAYS AS IDENTITY,
  at timestamptz NOT NULL DEFAULT now(),
  action text NOT NULL,
  from_step text,
  bulk_action_id uuid,
  CONSTRAINT job_requeues_pkey PRIMARY KEY (job_id, seq),
  CONSTRAINT job_requeues_action_valid CHECK (action IN ('requeue', 'bulk_retry', 'resume', 'rerun')),
  CONSTRAINT job_requeues_step_iff_rerun CHECK ((action = 'rerun') = (from_step IS NOT NULL)),
  CONSTRAINT job_requeues_step_bounded CHECK (from_step IS NULL OR length(from_step) BETWEEN 1 AND 255),
  CONSTRAINT job_requeues_bulk_action_iff_bulk_retry CHECK ((action = 'bulk_retry') = (bulk_action_id IS NOT NULL))
);
