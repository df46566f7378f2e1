import type { JobStatus } from "./states.js";
import { TERMINAL_STATUSES } from "./states.js";
import { type JobEvent, transitionOf } from "./transitions.js";

/**
 * What settling a dependent reads: its state and the counts of its
 * dependencies (`job_dependency_state`), and the failure policy of the edge
 * to the dependency that blocks it, if one does.
 */
export interface DependentCounts {
  /** The dependent's state; settling looks only at jobs that have not started. */
  status: JobStatus;
  /** Whether its own dependencies ended it (dead or cancelled), so that a requeue of one may bring it back. */
  endedByDependency: boolean;
  /** Dependencies that ended other than succeeded under the `fail` or `cancel` policy. */
  blocking: number;
  /** Dependencies that have not ended. */
  pending: number;
  /** Dependencies that ended other than succeeded. */
  failed: number;
  /** `all`: run once every dependency ended as its policy allows; `any_failed`: only if one of them failed. */
  runIf: "all" | "any_failed";
  /** The policy of the edge to the blocking dependency: `fail`, `cancel`, or none when nothing blocks. */
  onFailure: "fail" | "cancel" | "run" | null;
}

/** A condition on a dependent's counts; `DEPENDENT_RULES` tries them in order. */
export type DependentCondition = "blocked_fail" | "blocked" | "pending" | "condition_unmet" | "always";

/**
 * How a dependent's counts pick the event that settles it: the first rule
 * whose condition holds names the event, and the transition table says
 * where that event moves the dependent from its state (nowhere, when the
 * table has no row). The store renders the same rules into SQL
 * (`job_dependents_settle`), which must decide inside the database, in the
 * transaction that ends a dependency.
 */
export const DEPENDENT_RULES: ReadonlyArray<{ when: DependentCondition; event: JobEvent }> = [
  { when: "blocked_fail", event: "dependency_failed" },
  { when: "blocked", event: "dependency_cancelled" },
  { when: "pending", event: "dependency_reopened" },
  { when: "condition_unmet", event: "dependency_cancelled" },
  { when: "always", event: "dependencies_met" },
];

/** Each condition of `DEPENDENT_RULES`, on the counts. */
export const DEPENDENT_CONDITIONS: Readonly<Record<DependentCondition, (counts: DependentCounts) => boolean>> = {
  blocked_fail: (c) => c.blocking > 0 && c.onFailure === "fail",
  blocked: (c) => c.blocking > 0,
  pending: (c) => c.pending > 0,
  condition_unmet: (c) => c.runIf === "any_failed" && c.failed === 0,
  always: () => true,
};

/**
 * Whether settling may move a dependent that has not started: one that
 * has not finished, or one that its own dependencies ended. A job ended
 * any other way (cancelled by a user, say) stays as it is.
 */
export function settleMayMove(counts: Pick<DependentCounts, "status" | "endedByDependency">): boolean {
  return !TERMINAL_STATUSES.includes(counts.status) || counts.endedByDependency;
}

/** The state a dependent that has not started moves to when its counts change (its own state when it does not move). */
export function settleDependent(counts: DependentCounts): JobStatus {
  if (!settleMayMove(counts)) return counts.status;
  const rule = DEPENDENT_RULES.find((candidate) => DEPENDENT_CONDITIONS[candidate.when](counts))!;
  return transitionOf(counts.status, rule.event) ?? counts.status;
}
