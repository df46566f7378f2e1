import type { Logger } from "pino";
import { toStoredError } from "./errors-to-store.js";
import type { Settled } from "./running-job.js";


/**
 * The end of an attempt whose `ctx.transaction` committed: the job is
 * already succeeded, with the transaction's result, in the database. What
 * the handler did afterwards cannot undo that, so it is logged, never
 * recorded (a failure written now would contradict committed side effects).
 * Returns the outcome label for metrics.
 */
export function reportCommitted(settled: Settled, log: Logger): "succeeded" {
  if (settled.kind === "threw") {
    log.warn({ err: toStoredError(settled.error) }, "handler threw after its transaction committed; the job stays succeeded");
  } else if (settled.kind === "forced") {
    log.warn({ reason: settled.end.reason.message }, `attempt ended (${settled.end.kind}) after its transaction committed; the job stays succeeded`);
  } else if (settled.value !== undefined) {
    log.debug("handler returned a value after its transaction committed; the transaction's result is the one kept");
  }
  return "succeeded";
}
