import { encodeJson } from "../core/json.js";
import { type AttemptEnding, decideOutcome, type OutcomeDecision, type OutcomeInputs } from "../core/outcome.js";
import type { Settled } from "./attempt.js";

/** What one attempt's end comes to before anything is written (decideAttemptEnd). */
export interface AttemptEndDecision {
  /** The job's next state, as decideOutcome rules. */
  decision: OutcomeDecision;
  /** A success's result as the JSON text stored (null: the handler returned undefined); null for any other end. */
  result: string | null;
  /**
   * What is recorded as the attempt's error: whatever was thrown (`null`
   * and `undefined` included), the returned RetryAfter, why the attempt was
   * forced, or the encoding error of a result that is not JSON; undefined
   * for a success.
   */
  error: unknown;
}

/**
 * Decide how a settled attempt ends: the one path from a handler's end to
 * the job's next state, for the worker (executor.ts writes it) and for
 * runHandler (which reports it). A success's value is encoded as it is
 * stored; a value that cannot be stored fails the attempt, as if the
 * handler had thrown the encoding error. A requested cancel is applied
 * later, where its flag is read under the row lock (withCancelRequest).
 */
export function decideAttemptEnd(settled: Settled, inputs: OutcomeInputs): AttemptEndDecision {
  const decision = decideOutcome(endingOf(settled), inputs);
  if (decision.nextStatus === "succeeded" && settled.kind === "returned") {
    try {
      return { decision, result: settled.value === undefined ? null : encodeJson(settled.value, "result"), error: undefined };
    } catch (error) {
      return { decision: decideOutcome({ kind: "threw", error }, inputs), result: null, error };
    }
  }
  return { decision, result: null, error: recordedError(settled) };
}

function endingOf(settled: Settled): AttemptEnding {
  return settled.kind === "forced" ? { kind: "forced", reason: settled.end.kind } : settled;
}

/** What is stored as the attempt's error: whatever was thrown, the returned RetryAfter, or why it was forced. */
export function recordedError(settled: Settled): unknown {
  if (settled.kind === "returned") return settled.value;
  if (settled.kind === "threw") return settled.error;
  return settled.end.reason;
}
