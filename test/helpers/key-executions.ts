/** One execution of a keyed job: its key, start and end in microseconds since the epoch (end: MAX_SAFE_INTEGER while running). */
export interface KeyedExecution {
  key: string;
  start: number;
  end: number;
}

/** SQL reading a queue's executions, running ones included, as KeyedExecution rows ($1 queue; `{{schema}}` to be replaced). */
export const KEYED_EXECUTIONS_SQL = `
SELECT j.limit_key AS key, (extract(epoch FROM e.started_at) * 1000000)::int8 AS start,
       (extract(epoch FROM e.finished_at) * 1000000)::int8 AS end
FROM {{schema}}.job_attempts AS e JOIN {{schema}}.jobs AS j ON j.id = e.job_id
WHERE j.queue = $1 ORDER BY e.started_at, e.id`;

/** Rows of KEYED_EXECUTIONS_SQL as KeyedExecution. */
export function keyedExecutions(rows: ReadonlyArray<{ key: string; start: string | number; end: string | number | null }>): KeyedExecution[] {
  return rows.map((row) => ({ key: row.key, start: Number(row.start), end: row.end === null ? Number.MAX_SAFE_INTEGER : Number(row.end) }));
}

function byKey(executions: readonly KeyedExecution[]): Map<string, KeyedExecution[]> {
  const groups = new Map<string, KeyedExecution[]>();
  for (const e of executions) groups.set(e.key, [...(groups.get(e.key) ?? []), e]);
  return groups;
}

/** The most executions of each key overlapping at one instant, as [started, ended) intervals. */
export function maxOverlapByKey(executions: readonly KeyedExecution[]): Map<string, number> {
  const result = new Map<string, number>();
  for (const [key, list] of byKey(executions)) {
    // An end at the instant of a start comes first: [started, ended).
    const events = list.flatMap((e): Array<[number, number]> => [[e.start, 1], [e.end, -1]]).sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    let now = 0;
    let max = 0;
    for (const [, delta] of events) max = Math.max(max, (now += delta));
    result.set(key, max);
  }
  return result;
}

/**
 * The most starts of each key in one fixed window of `intervalMs`, the
 * windows rebuilt as the claim keeps them: one opens at the first start
 * after the previous one closed.
 */
export function maxStartsPerWindow(executions: readonly KeyedExecution[], intervalMs: number): Map<string, { max: number; windows: number }> {
  const result = new Map<string, { max: number; windows: number }>();
  for (const [key, list] of byKey(executions)) {
    let windowStart = Number.NEGATIVE_INFINITY;
    let count = 0;
    let max = 0;
    let windows = 0;
    for (const { start } of [...list].sort((a, b) => a.start - b.start)) {
      if (start >= windowStart + intervalMs * 1000) {
        windowStart = start;
        count = 0;
        windows += 1;
      }
      max = Math.max(max, (count += 1));
    }
    result.set(key, { max, windows });
  }
  return result;
}
