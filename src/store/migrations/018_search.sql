-- Searching and counting at scale (docs/operations.md, "Searching and
-- counting"): statistics for the planner's estimates, the index that keeps a
-- search of dead jobs off the rest of the table, and the function that
-- reads an estimate.

-- Statistics of the columns searches and counts combine. Without them the
-- planner multiplies each column's frequency as if queue (or kind, or
-- tenant) said nothing about status, and a queue that is all `succeeded`
-- got the table's share of every state. With the most common combinations
-- kept (mcv), a count above the exact limit and the overview's finished
-- counts are estimated from the combination's own frequency. They cost
-- only ANALYZE time, never a write: no index, nothing on the claim path.
CREATE STATISTICS {{schema}}.jobs_queue_status_stats (mcv) ON queue, status FROM {{schema}}.jobs;
CREATE STATISTICS {{schema}}.jobs_kind_status_stats (mcv) ON kind, status FROM {{schema}}.jobs;
CREATE STATISTICS {{schema}}.jobs_tenant_queue_status_stats (mcv) ON tenant, queue, status FROM {{schema}}.jobs;

-- Dead jobs by queue: a search or count of one queue's dead jobs (the
-- dashboard's dead list, the queue-depth gauge) reads these entries instead
-- of walking the primary key past every finished job; jobs_dead_idx
-- (migration 017) keeps every queue's dead jobs in id order.
-- Partial: only a job that goes dead writes an entry, and updates to jobs
-- are never HOT anyway (every claim and completion changes status, which
-- the partial indexes' predicates read), so no other write pays for it.
CREATE INDEX jobs_dead_by_queue_idx ON {{schema}}.jobs (queue, id) WHERE status = 'dead';

-- The planner's row estimate for jobs in one state, optionally of one queue
-- and one tenant: the `Plan Rows` of EXPLAIN, which reads statistics and the
-- table's size, never its rows. One call plans one small statement (a
-- fraction of a millisecond), so an overview of many queues takes one round trip.
-- Values are quoted by quote_literal, never spliced in as they are.
CREATE FUNCTION {{schema}}.jobs_estimate(p_status text, p_queue text, p_tenant text) RETURNS bigint
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
$$;
