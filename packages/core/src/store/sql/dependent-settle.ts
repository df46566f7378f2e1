import { DEPENDENT_RULES, type DependentCondition } from "../../core/dependents.js";
import type { JobStatus } from "../../core/states.js";
import { TRANSITIONS } from "../../core/transitions.js";
import { TERMINAL } from "./status-sets.js";

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

/** `CASE status WHEN 'from' THEN 'to' … ELSE status END`: the rows of one event of the transition table. */
function eventCase(status: string, event: keyof typeof TRANSITIONS): string {
  const rows = Object.entries(TRANSITIONS[event]) as Array<[JobStatus, JobStatus]>;
  if (rows.length === 0) return status;
  return `CASE ${status} ${rows.map(([from, to]) => `WHEN '${from}' THEN '${to}'`).join(" ")} ELSE ${status} END`;
}

/**
 * The state a dependent moves to (settleDependent in core), as an SQL
 * expression over `status` (the dependent's state), `s` (its
 * job_dependency_state row) and `edge` (the edge to its blocker, if any).
 */
export function dependentSettleCase(status: string): string {
  const rules = DEPENDENT_RULES.map(({ when, event }) => `WHEN ${CONDITIONS[when]} THEN ${eventCase(status, event)}`);
  return [
    "CASE",
    `WHEN ${status} IN (${TERMINAL}) AND NOT s.ended_by_dependency THEN ${status}`,
    ...rules,
    "END",
  ].join("\n        ");
}
