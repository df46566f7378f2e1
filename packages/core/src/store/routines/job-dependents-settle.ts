import { dependentSettleCase, dependentSettleEvent, SETTLE_EVENTS } from "../sql/dependent-settle.js";
import { type JobWrites, moveLiveJobs, returnEndedJobs } from "../sql/job-moves.js";
import { statusWrites } from "../sql/status-writes.js";
import { LIVE, STATE, TERMINAL } from "../sql/status-sets.js";
import type { Routine } from "./routine.js";

/**
 * What settling writes: what its event (d.event) writes by the transition
 * table, with the error that names the dependency that ended it.
 */
const SETTLE_WRITES: JobWrites = statusWrites(
  { expr: "d.event", events: SETTLE_EVENTS },
  {
    from: "d.old_status",
    error: `CASE
        WHEN d.blocker IS NOT NULL THEN jsonb_build_object(
          'name', 'DependencyFailed',
          'message', format('dependency %s (%s) ended %s', d.blocker, d.blocker_kind, d.blocker_status),
          'dependencyId', d.blocker)
        ELSE jsonb_build_object(
          'name', 'NoDependencyFailed',
          'message', 'every dependency succeeded, and this job runs only when one fails') END`,
  },
);

/** What the rounds after a move read of each moved job, besides JOB_COLUMNS. */
const MOVED_ALSO = { old_status: "d.old_status", had_dependents: "j.has_dependents" } as const;

/**
 * Settle dependents whose counts changed: move each that has not started
 * (started_at IS NULL) to the state its counts call for, and return the ones
 * whose ending changed (they ended, or came back from an end) and have
 * dependents of their own, for the next round. The state is decided by
 * settleDependent's rules (core/dependents.ts), rendered into SQL by
 * dependentSettleEvent: a blocking failure kills or cancels by its policy,
 * a reopened dependency re-arms, a met set queues.
 *
 * A job killed by its dependency is its own dead letter (reason
 * `dependency_failed`), and one that comes back leaves the dead-letter
 * queue (job-moves.ts). A job that has started is never moved: it ran with
 * what its dependencies were then. A job without a state row (released by
 * a requeue of its own, see deadLetterRequeue) is never moved either. Rows
 * are locked in id order.
 */
export const jobDependentsSettle: Routine = {
  name: "job_dependents_settle",
  sql: `
CREATE OR REPLACE FUNCTION {{schema}}.job_dependents_settle(p_jobs uuid[], OUT r_ids uuid[], OUT r_dirs integer[], OUT r_bad boolean[])
LANGUAGE plpgsql
-- Every read names its rows by key; a whole-table scan is never the cheaper guess.
SET enable_seqscan = off AS $$
BEGIN
  WITH current AS (
    SELECT j.id, j.status
    FROM {{schema}}.jobs AS j
    WHERE j.id = ANY(p_jobs) AND j.started_at IS NULL
    ORDER BY j.id
    FOR UPDATE OF j
  ), settling AS (
    SELECT c.id, c.status AS old_status, s.blocker, blocker.kind AS blocker_kind, blocker.status AS blocker_status,
      ${dependentSettleEvent("c.status")} AS event
    FROM current AS c
    JOIN {{schema}}.job_dependency_state AS s ON s.job_id = c.id AND s.job_id = ANY(p_jobs)
    LEFT JOIN {{schema}}.job_dependencies AS edge ON edge.depends_on = s.blocker AND edge.job_id = c.id AND edge.job_id = ANY(p_jobs)
    LEFT JOIN {{schema}}.jobs AS blocker ON blocker.id = s.blocker
  ), decided AS (
    SELECT g.*, ${dependentSettleCase("g.event", "g.old_status")} AS new_status FROM settling AS g
  )${moveLiveJobs(
    {
      name: "settled",
      from: "decided",
      alias: "d",
      where: "j.id = d.id",
      only: `d.new_status <> d.old_status AND d.old_status IN (${LIVE})`,
      returning: MOVED_ALSO,
      release: false,
    },
    SETTLE_WRITES,
  )}${returnEndedJobs(
    {
      name: "reopened",
      from: "decided",
      alias: "d",
      where: "j.id = d.id",
      only: `d.old_status IN (${TERMINAL}) AND d.new_status IN (${LIVE})`,
      returning: MOVED_ALSO,
      release: false,
    },
    SETTLE_WRITES,
  )}, moved AS (
    SELECT * FROM settled_moved UNION ALL SELECT * FROM reopened_moved
  ), flagged AS (
    UPDATE {{schema}}.job_dependency_state AS s SET ended_by_dependency = m.status IN (${STATE.dead}, ${STATE.cancelled})
    FROM moved AS m
    WHERE s.job_id = ANY(ARRAY(SELECT id FROM moved)) AND s.job_id = m.id
      AND s.ended_by_dependency <> (m.status IN (${STATE.dead}, ${STATE.cancelled}))
  )
  SELECT coalesce(array_agg(m.id ORDER BY m.id), '{}'),
         coalesce(array_agg(CASE WHEN m.status IN (${STATE.cancelled}, ${STATE.dead}) THEN 1 ELSE -1 END ORDER BY m.id), '{}'),
         coalesce(array_agg(true ORDER BY m.id), '{}')
    INTO r_ids, r_dirs, r_bad
  FROM moved AS m
  WHERE m.had_dependents
    AND (m.status IN (${STATE.cancelled}, ${STATE.dead})) <> (m.old_status IN (${STATE.cancelled}, ${STATE.dead}));
END
$$;`,
};
