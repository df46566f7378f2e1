import type { Routine } from "./routine.js";

/**
 * The planner's row estimate for jobs in one state, optionally of one queue
 * and one tenant: the `Plan Rows` of EXPLAIN, which reads statistics and the
 * table's size, never its rows. One call plans one small statement (a
 * fraction of a millisecond), so an overview of many queues takes one round trip.
 * Values are quoted by quote_literal, never spliced in as they are.
 */
export const jobsEstimate: Routine = {
  name: "jobs_estimate",
  sql: `
CREATE OR REPLACE FUNCTION {{schema}}.jobs_estimate(p_status text, p_queue text, p_tenant text) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
  plan json;
BEGIN
  EXECUTE 'EXPLAIN (FORMAT JSON) SELECT 1 FROM {{schema}}.jobs WHERE status = ' || quote_literal(p_status)
    || CASE WHEN p_queue IS NULL THEN '' ELSE ' AND queue = ' || quote_literal(p_queue) END
    || CASE WHEN p_tenant IS NULL THEN '' ELSE ' AND tenant = ' || quote_literal(p_tenant) END
    INTO plan;
  RETURN (plan -> 0 -> 'Plan' ->> 'Plan Rows')::bigint;
END
$$;`,
};
