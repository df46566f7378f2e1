-- Step, sleep and wait records get states of their own, none of them a job
-- state (core/step-transitions.ts): a sleep is `asleep` until its time
-- comes, then `awake`; a wait is `awaiting` until it is `received` or
-- `timed_out`. Steps keep `completed` and `failed`.
--
-- Only job_steps is locked (from the first statement to the commit); the
-- jobs tables are not touched, so claims and ends of jobs without records go
-- on meanwhile.
ALTER TABLE {{schema}}.job_steps DROP CONSTRAINT job_steps_state_valid;
UPDATE {{schema}}.job_steps
SET state = CASE kind
  WHEN 'sleep' THEN CASE state WHEN 'sleeping' THEN 'asleep' ELSE 'awake' END
  ELSE 'awaiting' END
WHERE (kind = 'sleep' AND state IN ('sleeping', 'completed')) OR (kind = 'wait' AND state = 'waiting');
ALTER TABLE {{schema}}.job_steps ADD CONSTRAINT job_steps_state_valid CHECK (
    (kind = 'step' AND state = ANY ('{completed,failed}'::text[]))
    OR (kind = 'sleep' AND state = ANY ('{asleep,awake}'::text[]))
    OR (kind = 'wait' AND state = ANY ('{awaiting,received,timed_out}'::text[]))) NOT VALID;
ALTER TABLE {{schema}}.job_steps VALIDATE CONSTRAINT job_steps_state_valid;

-- sendEvent finds the open waits an event matches here, and the metrics
-- count them: the states `event_received` moves (sql/status-sets.ts OPEN_WAIT).
CREATE INDEX job_steps_open_waits_awaiting_idx ON {{schema}}.job_steps (tenant, event, event_key) WHERE state = 'awaiting';
DROP INDEX {{schema}}.job_steps_open_waits_idx;
ALTER INDEX {{schema}}.job_steps_open_waits_awaiting_idx RENAME TO job_steps_open_waits_idx;
