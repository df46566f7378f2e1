import type { Routine } from "./routine.js";

/**
 * One bound of a partition of job_history, as job_history_span computes it
 * from the partition's name: with `p_end` 'TO', the end of the last day it
 * holds; with 'FROM', the start of its first (null for MINVALUE). Null for
 * the default partition and for a table whose name is not one of history's.
 */
export const jobHistoryBound: Routine = {
  name: "job_history_bound",
  sql: `
CREATE OR REPLACE FUNCTION {{schema}}.job_history_bound(p_partition oid, p_end text) RETURNS timestamptz LANGUAGE sql STABLE AS $$
  SELECT CASE p_end WHEN 'FROM' THEN s.starts_at WHEN 'TO' THEN s.ends_at END
  FROM pg_class AS c CROSS JOIN LATERAL {{schema}}.job_history_span(c.relname::text) AS s
  WHERE c.oid = p_partition
$$;`,
};
