-- A job kind may keep its finished jobs for its own time (defineJob's
-- `retention`): a prune deletes each such kind's old rows through this
-- index, reading only that kind's rows past its age, however many rows of
-- other kinds are kept meanwhile (sql/retention.ts).
CREATE INDEX IF NOT EXISTS jobs_finished_by_kind_idx ON {{schema}}.jobs (kind, finished_at)
  WHERE status IN ('succeeded', 'cancelled');
