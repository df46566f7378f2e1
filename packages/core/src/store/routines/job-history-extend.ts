import { HISTORY_EXTEND_LOCK_TIMEOUT_MS } from "../../core/defaults.js";
import type { Routine } from "./routine.js";

/**
 * Make sure job_history has a partition for each day (UTC) from `p_from`
 * (null: today) to `p_days` days after today, so that a job finishing in
 * that time lands in its day and retention can later drop the day whole.
 * Returns how many partitions it made. Each is created on its own and then
 * attached, with the bounds job_history_span computes from its name, so
 * that what is read back later is what was attached. The statistics of the
 * columns counts combine are made per day, as autovacuum analyzes
 * partitions, never their parent. Called by migrate and by every worker's
 * upkeep (worker/history-upkeep.ts).
 *
 * Locks: ATTACH takes SHARE UPDATE EXCLUSIVE on job_history, which lets
 * completions and reads go on (CREATE TABLE … PARTITION OF would lock them
 * out), and ACCESS EXCLUSIVE on job_history_default while it checks that
 * none of the default's rows belongs to the day. Claims never read
 * job_history, and a completion into a day that has its partition never
 * touches the default; what does (a read by id through `jobs`, a row for a
 * day with no partition) waits while a day is attached. So each lock is
 * waited for at most `HISTORY_EXTEND_LOCK_TIMEOUT_MS` (200 ms), the
 * function's own lock_timeout: a day that cannot be attached in that time
 * (behind a long read of history, a prune's detach) ends the run, and the
 * next run makes the days left.
 *
 * Any number may run at once: one extender at a time per schema holds an
 * advisory lock, and one that cannot have it in that time returns 0,
 * leaving the days to the one that holds it (and to the next run); the one
 * after it finds them made. A day already covered is skipped.
 */
export const jobHistoryExtend: Routine = {
  name: "job_history_extend",
  sql: `
CREATE OR REPLACE FUNCTION {{schema}}.job_history_extend(p_from date, p_days integer) RETURNS integer LANGUAGE plpgsql
SET lock_timeout = ${HISTORY_EXTEND_LOCK_TIMEOUT_MS} AS $$
DECLARE
  today date := (now() AT TIME ZONE 'UTC')::date;
  d date;
  day_start timestamptz;
  part text;
  span record;
  made integer := 0;
BEGIN
  -- Two extenders at once could both find a day missing and race to make it.
  BEGIN
    PERFORM pg_advisory_xact_lock(hashtext('conveyor history ' || '{{schema}}'));
  EXCEPTION WHEN lock_not_available THEN
    RETURN 0;
  END;
  FOR d IN SELECT generate_series(coalesce(p_from, today), today + p_days, interval '1 day')::date LOOP
    part := 'job_history_' || to_char(d, 'YYYYMMDD');
    day_start := d::timestamp AT TIME ZONE 'UTC';
    -- A day already covered (by its own partition, or by one of those
    -- migration 028 made for the history it found) is left as it is.
    CONTINUE WHEN EXISTS (SELECT 1 FROM pg_inherits AS i JOIN pg_class AS c ON c.oid = i.inhrelid
                            CROSS JOIN LATERAL {{schema}}.job_history_span(c.relname::text) AS s
                          WHERE i.inhparent = '{{schema}}.job_history'::regclass
                            AND s.ends_at > day_start AND coalesce(s.starts_at, '-infinity') <= day_start);
    SELECT s.starts_at, s.ends_at INTO span FROM {{schema}}.job_history_span(part) AS s;
    -- Each day in a subtransaction of its own: one that fails takes only
    -- itself back, and the days made before it stay.
    BEGIN
      -- A day some job already ended in, in job_history_default (a clock
      -- far ahead), is left to it: attaching the day would fail on that
      -- row, and retention deletes the default partition's rows one by one.
      CONTINUE WHEN EXISTS (SELECT 1 FROM {{schema}}.job_history_default
                            WHERE finished_at >= span.starts_at AND finished_at < span.ends_at);
      EXECUTE format('CREATE TABLE {{schema}}.%I (LIKE {{schema}}.job_history INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE)', part);
      EXECUTE format('CREATE STATISTICS {{schema}}.%I (mcv) ON queue, status FROM {{schema}}.%I', part || '_queue_status_stats', part);
      EXECUTE format('CREATE STATISTICS {{schema}}.%I (mcv) ON kind, status FROM {{schema}}.%I', part || '_kind_status_stats', part);
      EXECUTE format('CREATE STATISTICS {{schema}}.%I (mcv) ON tenant, queue, status FROM {{schema}}.%I',
                     part || '_tenant_queue_status_stats', part);
      EXECUTE format('ALTER TABLE {{schema}}.job_history ATTACH PARTITION {{schema}}.%I FOR VALUES FROM (%L) TO (%L)',
                     part, span.starts_at, span.ends_at);
      made := made + 1;
    EXCEPTION
      WHEN lock_not_available THEN
        RETURN made;
      -- The day overlaps a partition whose bounds are not computed from a
      -- name (one attached by hand), or a row for it reached the default
      -- partition since the check above: either way it is left as it is.
      WHEN invalid_object_definition OR check_violation THEN
        NULL;
    END;
  END LOOP;
  RETURN made;
END
$$;`,
};
