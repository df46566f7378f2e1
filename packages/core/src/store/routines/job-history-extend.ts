import type { Routine } from "./routine.js";

/**
 * Make sure job_history has a partition for each day (UTC) from `p_from`
 * (null: today) to `p_days` days after today, so that a job finishing in that time lands in its
 * day and retention can later drop the day whole. Returns how many
 * partitions it made. Each is created on its own and then attached, with
 * the bounds job_history_span computes from its name, so that what is
 * read back later is what was attached. ATTACH takes a SHARE UPDATE
 * EXCLUSIVE lock on job_history, which lets completions and reads go on
 * (CREATE TABLE … PARTITION OF would lock them out), and checks only
 * job_history_default, which holds nothing unless a row fell outside
 * every day. The statistics of the columns counts combine are made per
 * day, as autovacuum analyzes partitions, never their parent. Called by
 * migrate and by each prune; any number may run at once (a day another
 * made first is skipped).
 */
export const jobHistoryExtend: Routine = {
  name: "job_history_extend",
  sql: `
CREATE OR REPLACE FUNCTION {{schema}}.job_history_extend(p_from date, p_days integer) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
  today date := (now() AT TIME ZONE 'UTC')::date;
  d date;
  day_start timestamptz;
  part text;
  span record;
  made integer := 0;
BEGIN
  -- One extender at a time per schema: two could both find a day missing.
  PERFORM pg_advisory_xact_lock(hashtext('conveyor history ' || '{{schema}}'));
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
    -- A day some job already ended in, in job_history_default (a clock far
    -- ahead), is left to it: attaching the day would fail on that row, and
    -- retention deletes the default partition's rows one by one.
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
  END LOOP;
  RETURN made;
END
$$;`,
};
