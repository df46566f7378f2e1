import { SearchTimeoutError } from "../core/errors.js";
import type { JobCount } from "../core/overview.js";
import type { JobSearchStore } from "../store/job-search-store.js";
import type { JobFilterValues } from "../store/sql/job-filter.js";

// Counts that never read the table through: exact up to a limit, the
// planner's estimate beyond it (or when counting hits the time bound),
// and flagged so.

/**
 * How many jobs match `filter`: counted one by one up to `limit`; above
 * it, or when counting did not finish within `timeoutMs`, the planner's
 * estimate (never below what was counted).
 */
export async function countJobs(search: JobSearchStore, filter: JobFilterValues, limit: number, timeoutMs: number): Promise<JobCount> {
  let counted = 0;
  try {
    counted = await search.jobCount(filter, limit + 1, timeoutMs);
    if (counted <= limit) return { count: counted, estimated: false };
  } catch (error) {
    if (!(error instanceof SearchTimeoutError)) throw error;
  }
  return { count: Math.max(await search.jobEstimate(filter, timeoutMs), counted), estimated: true };
}
