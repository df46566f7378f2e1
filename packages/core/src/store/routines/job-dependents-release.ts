import { STATE } from "../sql/status-sets.js";
import type { Routine } from "./routine.js";

/**
 * Count the ends (dir 1) and the returns from an end (dir -1) of jobs
 * p_ids into their dependents' states, then settle those dependents, and
 * repeat for the dependents whose own ending changed, until nothing moves.
 * p_bad says whether the end was other than success. One round per level
 * of the graph, each set-based: a chain ending at once costs its length in
 * rounds, not in nested trigger calls. The jobs it moves are walked by
 * its own loop: their moves record nothing for the commit's release.
 */
export const jobDependentsRelease: Routine = {
  name: "job_dependents_release",
  sql: `
CREATE OR REPLACE FUNCTION {{schema}}.job_dependents_release(p_ids uuid[], p_dirs integer[], p_bad boolean[])
RETURNS void LANGUAGE plpgsql SET enable_seqscan = off AS $$
DECLARE
  dependents uuid[];
BEGIN
  WHILE cardinality(p_ids) > 0 LOOP
    dependents := ARRAY(
      SELECT DISTINCT d.job_id FROM {{schema}}.job_dependencies AS d WHERE d.depends_on = ANY(p_ids) ORDER BY 1);
    EXIT WHEN cardinality(dependents) = 0;
    PERFORM 1 FROM {{schema}}.job_dependency_state AS s
      WHERE s.job_id = ANY(dependents) ORDER BY s.job_id FOR UPDATE;
    UPDATE {{schema}}.job_dependency_state AS s SET
      pending = s.pending - delta.ended,
      failed = s.failed + delta.failed,
      blocking = s.blocking + delta.blocking,
      blocker = CASE
        WHEN s.blocking + delta.blocking = 0 THEN NULL
        WHEN s.blocker IS NOT NULL AND NOT s.blocker = ANY(delta.returned) THEN s.blocker
        WHEN delta.new_blocker IS NOT NULL THEN delta.new_blocker
        -- The named blocker came back; name another that still blocks.
        ELSE (SELECT d.depends_on FROM {{schema}}.job_dependencies AS d
              JOIN {{schema}}.jobs AS p ON p.id = d.depends_on
              WHERE d.job_id = s.job_id AND d.on_failure <> 'run' AND p.status IN (${STATE.cancelled}, ${STATE.dead})
              ORDER BY 1 LIMIT 1)
      END
    FROM (
      SELECT d.job_id,
             sum(e.dir) AS ended,
             coalesce(sum(e.dir) FILTER (WHERE e.bad), 0) AS failed,
             coalesce(sum(e.dir) FILTER (WHERE e.bad AND d.on_failure <> 'run'), 0) AS blocking,
             (array_agg(e.id ORDER BY e.id) FILTER (WHERE e.dir = 1 AND e.bad AND d.on_failure <> 'run'))[1] AS new_blocker,
             coalesce(array_agg(e.id) FILTER (WHERE e.dir = -1), '{}') AS returned
      FROM unnest(p_ids, p_dirs, p_bad) AS e(id, dir, bad)
      JOIN {{schema}}.job_dependencies AS d ON d.depends_on = e.id
      GROUP BY d.job_id
    ) AS delta
    WHERE s.job_id = delta.job_id AND s.job_id = ANY(dependents);
    SELECT r_ids, r_dirs, r_bad INTO p_ids, p_dirs, p_bad FROM {{schema}}.job_dependents_settle(dependents);
  END LOOP;
END
$$;`,
};
