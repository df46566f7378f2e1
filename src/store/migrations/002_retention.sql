-- Retention (see src/store/sql/retention.ts for the measurements behind these).

-- Prune path for finished jobs: exactly the rows a prune may delete, oldest
-- first. Partial, so queued, running, retrying and dead jobs are not in it.
CREATE INDEX jobs_finished_prune_idx ON {{schema}}.jobs (finished_at)
  WHERE status IN ('succeeded', 'cancelled');
-- Prune path for dead letters, oldest first. Dead-lettering is rare, so this
-- index costs next to nothing to keep.
CREATE INDEX dead_letter_jobs_dead_at_idx ON {{schema}}.dead_letter_jobs (dead_at);
