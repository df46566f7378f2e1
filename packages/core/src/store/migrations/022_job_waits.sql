-- Jobs a client waits for (`waitFor`): the trigger jobs_notify_ended
-- NOTIFYs the end of these jobs only, in the transaction that ends them,
-- so that a transaction ending jobs nobody waits for never calls NOTIFY
-- (which holds a database-wide lock from its commit until the commit is on
-- disk). A row lives while its wait does; one left by a process that died
-- is deleted once `expires_at` has passed, by the next wait to start.
CREATE TABLE IF NOT EXISTS {{schema}}.job_waits (
  job_id uuid NOT NULL,
  waiter uuid NOT NULL,
  expires_at timestamptz NOT NULL,
  CONSTRAINT job_waits_pkey PRIMARY KEY (job_id, waiter)
);
CREATE INDEX IF NOT EXISTS job_waits_expires_idx ON {{schema}}.job_waits (expires_at);
-- Set on a job the first time a wait starts for it, and tested in the
-- trigger's WHEN: an end nobody ever waited for fires no trigger at all.
ALTER TABLE {{schema}}.jobs ADD COLUMN IF NOT EXISTS awaited boolean NOT NULL DEFAULT false;
