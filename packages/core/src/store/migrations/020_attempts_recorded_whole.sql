-- Every attempt's job_executions row is written whole when the attempt ends
-- (migration 19). A database migrated before 19 may still hold 'running'
-- rows of attempts claimed by older workers; this finishes the upgrade, so
-- that the statements that end attempts insert plain rows with no list of
-- exceptions to read.
--
-- The list of such attempts goes first, under its exclusive lock: a
-- statement of a worker built before this migration that ends an attempt
-- reads the list, so it either ends before this migration goes on, or
-- waits for it and then fails (the job's lease then expires, and the job
-- is reclaimed). A 'running' row whose
-- attempt still runs is deleted: the attempt lives on its job row and is
-- recorded whole when it ends. One whose attempt ended unrecorded (its job
-- has moved on) is finished as interrupted.
DROP TABLE IF EXISTS {{schema}}.executions_running_before_019;

DELETE FROM {{schema}}.job_executions AS e
USING {{schema}}.jobs AS j
WHERE e.outcome = 'running' AND j.id = e.job_id AND j.status = 'running' AND j.current_execution_id = e.id;

UPDATE {{schema}}.job_executions
SET outcome = 'interrupted', finished_at = greatest(started_at, now())
WHERE outcome = 'running';

-- Constraints that older migrations added NOT VALID, for rows from before
-- them; every row written since satisfies them, and the rows above are
-- gone. VALIDATE takes a lock that lets reads and writes go on.
ALTER TABLE {{schema}}.job_executions VALIDATE CONSTRAINT job_executions_ended;
ALTER TABLE {{schema}}.jobs VALIDATE CONSTRAINT jobs_unique_key_bounded;
ALTER TABLE {{schema}}.jobs VALIDATE CONSTRAINT jobs_unique_key_held_in_state;
