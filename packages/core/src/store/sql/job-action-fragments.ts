import { type JobWrites, moveLiveJobs, returnEndedJobs } from "./job-moves.js";
import { STATE } from "./status-sets.js";
import { statusWrites } from "./status-writes.js";

// What cancelling and requeueing do to a job row, shared by the statements
// on one job, on a flow and on a bulk action's batch, so that every path
// applies the same rule. Each reads the jobs it acts on from a CTE that
// locked them (its `status` as locked) and moves them with job-moves.ts.
// Not statements themselves, so this module is not among the store's queries.

/**
 * Cancel (the `cancel` rows of the transition table, over the locked row's
 * status): a job that has not started is cancelled at once; a running one
 * keeps running with the flag, and its worker is told at commit (its
 * heartbeat reads the flag too). A state with no row gives NULL, which the
 * NOT NULL status refuses: a statement that let such a job through would
 * fail rather than move it. Statements select the jobs with CANCELLABLE.
 */
const CANCEL_WRITES: JobWrites = statusWrites("cancel", { from: "t.status" });

/**
 * Cancel the live jobs of CTE `target` (id, status as locked, in id order):
 * CTEs ending in `<name>_moved`, the jobs as cancelled (JOB_COLUMNS).
 * `schema`: the tables' prefix, `{{schema}}` by default.
 */
export function cancelJobs(name: string, schema?: string): string {
  return moveLiveJobs(
    { schema, name, from: "target", alias: "t", where: "j.id = ANY(ARRAY(SELECT id FROM target)) AND j.id = t.id", notifyCancel: true },
    CANCEL_WRITES,
  );
}

/**
 * Requeue a dead job: back in its queue now, with fresh attempts and the
 * same id. The statement also deletes its dead-letter entry and its
 * dependency counts (it runs whatever its dependencies are), in the same
 * transaction.
 */
const REQUEUE_WRITES: JobWrites = statusWrites("requeue");

/**
 * Requeue the dead jobs of CTE `target` (id, status as locked): CTEs ending
 * in `<name>_moved`, the jobs as queued (JOB_COLUMNS).
 */
export function requeueDeadJobs(name: string, schema?: string): string {
  return returnEndedJobs(
    { schema, name, from: "target", alias: "t", where: "j.id = t.id", only: `t.status = ${STATE.dead}` },
    REQUEUE_WRITES,
    ["jobs_dead"],
  );
}
