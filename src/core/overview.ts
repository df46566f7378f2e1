// What counts answer. A count is exact up to a limit and the planner's
// estimate beyond it, and says which: an estimate comes from table
// statistics, never from reading the rows, so it costs the same at ten
// jobs as at ten million.

/** How many jobs match a filter (`countJobs`). */
export interface JobCount {
  /** Exact when `estimated` is false; else the planner's estimate, never below what was counted. */
  count: number;
  /** True when more jobs matched than the exact-count limit, or counting did not finish within the search time bound. */
  estimated: boolean;
}
