import type { Routine } from "./routine.js";

/**
 * The bounds of a partition of job_history, computed from its name, the
 * same for a partition that exists and one about to be made. Every name is
 * made from the day it is bounded by, so nothing is read back from the
 * catalog's deparsed text:
 * - `job_history_YYYYMMDD` (job_history_extend): that day (UTC), from its
 *   start to the start of the next;
 * - `job_history_before_YYYYMMDD` (migration 028: the history a database
 *   held when it moved to jobs by state): everything before that day's
 *   start; `starts_at` is null (MINVALUE);
 * - the day named for migration 027's cutoff (the day after 027 ran),
 *   which 028 made for the history that ended between the two: it reaches
 *   to the start of the day after 028 ran, more than one day when the copy
 *   between them ran past midnight. Both days come from the migrations
 *   ledger, whose `applied_at` is each migration's now(), the one its
 *   statements read, as it commits in their transaction.
 * No row for any other name (job_history_default, a table attached by hand).
 */
export const jobHistorySpan: Routine = {
  name: "job_history_span",
  sql: `
CREATE OR REPLACE FUNCTION {{schema}}.job_history_span(p_partition text)
RETURNS TABLE (starts_at timestamptz, ends_at timestamptz) LANGUAGE sql STABLE AS $$
  SELECT CASE WHEN n.before THEN NULL ELSE n.day::timestamp AT TIME ZONE 'UTC' END,
         (CASE WHEN n.before THEN n.day
               WHEN n.day = u.cutoff THEN greatest(n.day + 1, u.copied)
               ELSE n.day + 1 END)::timestamp AT TIME ZONE 'UTC'
  FROM (SELECT r.m[1] IS NOT NULL AS before, to_date(r.m[2], 'YYYYMMDD') AS day
        FROM regexp_match(p_partition, '^job_history_(before_)?([0-9]{8})$') AS r(m)
        WHERE r.m IS NOT NULL) AS n,
       (SELECT (SELECT (applied_at AT TIME ZONE 'UTC')::date + 1 FROM {{schema}}.migrations WHERE version = 27) AS cutoff,
               (SELECT (applied_at AT TIME ZONE 'UTC')::date + 1 FROM {{schema}}.migrations WHERE version = 28) AS copied) AS u
$$;`,
};
