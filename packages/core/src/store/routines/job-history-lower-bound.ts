import type { Routine } from "./routine.js";

/**
 * The lower bound of one partition of job_history, read from the catalog:
 * the start of the first day it holds; null for MINVALUE and for the
 * default partition.
 */
export const jobHistoryLowerBound: Routine = {
  name: "job_history_lower_bound",
  sql: `
CREATE OR REPLACE FUNCTION {{schema}}.job_history_lower_bound(p_partition oid) RETURNS timestamptz LANGUAGE sql STABLE AS $$
  SELECT (regexp_match(pg_get_expr(c.relpartbound, c.oid), 'FROM \\(''([^'']+)''\\)'))[1]::timestamptz
  FROM pg_class AS c WHERE c.oid = p_partition
$$;`,
};
