-- Every job's run time lies in the bound the library and the HTTP API check
-- (core/defaults.ts MIN_RUN_AT_MS and MAX_RUN_AT_MS): from 2000-01-01 UTC to
-- before the year 10000, so every stored run time is one a JavaScript Date
-- holds and ISO 8601 writes with four digits. Retry and RetryAfter delays
-- are bounded by MAX_DELAY_MS (10 years), so statements that move run_at
-- forward stay inside it.
--
-- Added NOT VALID, then validated when it can be: rows already outside the
-- bound (only possible before this migration) must not stop an upgrade.
-- NOT VALID still checks every row inserted or updated from here on. The
-- VALIDATE scans the table once under this migration's exclusive lock (as
-- 011 does); when a stored row breaks the rule, its check_violation is
-- caught and the constraint stays NOT VALID. Those rows stay readable (the
-- API and CLI show a time they cannot represent as null), and once an
-- operator has fixed or deleted them,
--   ALTER TABLE <schema>.jobs VALIDATE CONSTRAINT jobs_run_at_bounded;
-- validates it under a lock that lets enqueues and claims go on.
ALTER TABLE {{schema}}.jobs
  ADD CONSTRAINT jobs_run_at_bounded CHECK (
    run_at >= '2000-01-01 00:00:00+00'::timestamptz AND run_at < '10000-01-01 00:00:00+00'::timestamptz) NOT VALID;

DO $$
BEGIN
  ALTER TABLE {{schema}}.jobs VALIDATE CONSTRAINT jobs_run_at_bounded;
EXCEPTION WHEN check_violation THEN
  RAISE NOTICE 'jobs_run_at_bounded left NOT VALID: some stored jobs have a run_at outside 2000-01-01 .. 9999-12-31';
END
$$;
