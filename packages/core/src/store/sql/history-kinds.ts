// The kinds of jobs in job_history, found by a loose scan of
// jobs_finished_by_kind_idx: one index probe per kind and day, however many
// jobs each holds. Statements that read history by time go through it, kind
// by kind, so that no index on finished_at alone is needed (the days are
// partitions). Not a statement itself, so this module is not among the
// store's queries.

/**
 * A recursive CTE `<name>(kind)`: every kind in job_history, in order, then
 * one NULL row. Its statement must start `WITH RECURSIVE`.
 */
export function historyKinds(name: string): string {
  return `${name} AS (
  (SELECT h.kind FROM {{schema}}.job_history AS h ORDER BY h.kind LIMIT 1)
  UNION ALL
  SELECT (SELECT h.kind FROM {{schema}}.job_history AS h WHERE h.kind > k.kind ORDER BY h.kind LIMIT 1)
  FROM ${name} AS k WHERE k.kind IS NOT NULL
)`;
}
