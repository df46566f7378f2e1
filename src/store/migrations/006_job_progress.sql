-- Job progress: the latest value a handler reported with ctx.progress(), and
-- when it was stored (database clock). Both stay on the job after it ends, so
-- the last progress of a failed or cancelled attempt can still be read.
-- Nullable with no default: adding them rewrites nothing, however many jobs exist.
ALTER TABLE {{schema}}.jobs
  ADD COLUMN progress            jsonb,
  ADD COLUMN progress_updated_at timestamptz;
