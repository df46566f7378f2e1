// The one statement of which limit applies to a key, shared by the key claim
// (routines/job-claim-by-key.ts) and the statements that report on keys
// (key-limits.ts). Not statements themselves, so this module is not among the
// store's queries.

/** A column of key_limits. */
type LimitColumn = "concurrency_limit" | "rate_limit" | "rate_interval_ms";

/**
 * A key's effective `column`: the override's row when the key has one, else
 * the queue default's (an override's null means "no limit", not "the
 * default"). Needs the default row aliased `d` and the override's `o`
 * (LEFT JOINed).
 */
export function effectiveKeyLimit(column: LimitColumn): string {
  return `CASE WHEN o.limit_key IS NULL THEN d.${column} ELSE o.${column} END`;
}

/** A key's three effective limits, as columns of those names. */
export const EFFECTIVE_KEY_LIMITS = (["concurrency_limit", "rate_limit", "rate_interval_ms"] as const)
  .map((column) => `${effectiveKeyLimit(column)} AS ${column}`)
  .join(",\n  ");
