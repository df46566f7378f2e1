import type { Routine } from "./routine.js";

/**
 * One bound of a partition of job_history, read from the catalog: with
 * `p_end` 'TO', the end of the last day it holds; with 'FROM', the start
 * of its first (null for MINVALUE). Null for the default partition.
 */
export const jobHistoryBound: Routine = {
  name: "job_history_bound",
  sql: `
CREATE OR REPLACE FUNCTION {{schema}}.job_history_bound(p_partition oid, p_end text) RETURNS timestamptz LANGUAGE sql STABLE AS $$
  SELECT (regexp_match(pg_get_expr(c.relpartbound, c.oid), p_end || ' \\(''([^'']+)''\\)'))[1]::timestamptz
  FROM pg_class AS c WHERE c.oid = p_partition
$$;`,
};
