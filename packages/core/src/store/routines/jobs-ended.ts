import type { Routine } from "./routine.js";

/**
 * What follows the ends (p_dir 1) or the returns from an end (p_dir -1) of
 * jobs p_ids, called by the statement that moved them (sql/job-moves.ts) or,
 * for a move written by hand, by jobs_status_changed:
 * - a job with dependents (p_depended) is recorded in job_ends, whose
 *   deferred trigger releases its dependents as the transaction commits
 *   (job_ends_release); p_bad: whether the end was other than success.
 *   Unless p_release is false: the release itself moves the dependents it
 *   settles, and walks their own dependents in its loop.
 * - a waiter on an ended job (p_awaited, and a row in job_waits) is told:
 *   NOTIFY `<schema>:ended` with its id, sent at the commit, never for an
 *   end that rolls back.
 */
export const jobsEnded: Routine = {
  name: "jobs_ended",
  sql: `
CREATE OR REPLACE FUNCTION {{schema}}.jobs_ended(
  p_ids uuid[], p_bad boolean[], p_depended boolean[], p_awaited boolean[], p_dir integer, p_release boolean
) RETURNS integer LANGUAGE plpgsql AS $$
BEGIN
  IF p_release THEN
    INSERT INTO {{schema}}.job_ends (job_id, dir, bad)
    SELECT e.id, p_dir, e.bad FROM unnest(p_ids, p_bad, p_depended) AS e(id, bad, depended) WHERE e.depended;
  END IF;
  PERFORM pg_notify(btrim('{{schema}}', '"') || ':ended', e.id::text)
  FROM unnest(p_ids, p_awaited) AS e(id, awaited)
  WHERE e.awaited AND EXISTS (SELECT 1 FROM {{schema}}.job_waits AS w WHERE w.job_id = e.id);
  RETURN cardinality(p_ids);
END
$$;`,
};
