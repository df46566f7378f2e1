import type { Routine } from "./routine.js";

/**
 * The upper bound of one partition of job_history, read from the catalog:
 * the end of the last day it holds; null for the default partition.
 */
export const jobHistoryBound: Routine = {
  name: "job_history_bound",
  sql: `
CREATE OR REPLACE FUNCTION {{schema}}.job_history_bound(p_partition oid) RETURNS timestamptz LANGUAGE sql STABLE AS $$
  SELECT (regexp_match(pg_get_expr(c.relpartbound, c.oid), 'TO \\(''([^'']+)''\\)'))[1]::timestamptz
  FROM pg_class AS c WHERE c.oid = p_partition
$$;`,
};
