import { DEPENDENT_RULES, type DependentCondition } from "../../core/dependents.js";
import type { JobEvent } from "../../core/transitions.js";
import { TERMINAL } from "./status-sets.js";
import { stateAfter } from "./status-writes.js";

// The settle rule of core/dependents.ts rendered as SQL, for
// job_dependents_settle, which decides inside the database in the
// transaction that ends a dependency. Nothing here decides: the order of the
// rules, their events and where each event moves a job all come from core;
// test/dependents-settle.test.ts runs every case through both.

/** Each condition of DEPENDENT_RULES over the columns of `job_dependency_state AS s` and the blocker's edge `edge`. */
const CONDITIONS: Readonly<Record<DependentCondition, string>> = {
  blocked_fail: "s.blocking > 0 AND edge.on_failure = 'fail'",
  blocked: "s.blocking > 0",
  pending: "s.pending > 0",
  condition_unmet: "s.run_if = 'any_failed' AND s.failed = 0",
  always: "true",
};

/** Every event a settle may write (DEPENDENT_RULES), in rule order, each once. */
export const SETTLE_EVENTS: readonly JobEvent[] = [...new Set(DEPENDENT_RULES.map((rule) => rule.event))];

/**
 * The event that settles a dependent (the first rule of DEPENDENT_RULES
 * whose condition holds), as an SQL expression over `status` (the
 * dependent's state), `s` (its job_dependency_state row) and `edge` (the
 * edge to its blocker, if any); NULL for a job settling may not move
 * (settleMayMove).
 */
export function dependentSettleEvent(status: string): string {
  return [
    "CASE",
    `WHEN ${status} IN (${TERMINAL}) AND NOT s.ended_by_dependency THEN NULL`,
    ...DEPENDENT_RULES.map(({ when, event }) => `WHEN ${CONDITIONS[when]} THEN '${event}'`),
    "END",
  ].join("\n        ");
}

/**
 * The state a dependent moves to (settleDependent in core): where its
 * settling event (`event`, dependentSettleEvent) moves it from `status`,
 * by the transition table, else `status` (it does not move).
 */
export function dependentSettleCase(event: string, status: string): string {
  return stateAfter({ expr: event, events: SETTLE_EVENTS }, status, status);
}
