import { retryDelayMs, type ResolvedBackoff } from "./backoff.js";
import { PermanentError, RetryAfter } from "./errors.js";
import type { DeadLetter } from "./model.js";

/**
 * How an attempt ended, before anything is written:
 *
 * - `returned`: the handler returned `value` (a returned `RetryAfter` asks to run again).
 * - `threw`: the handler threw or rejected with `error` (anything, not only Errors).
 * - `forced`: the worker stopped waiting for the handler: its time limit
 *   (`timeout`), its lease was found lost (`lease_lost`), or the worker shut
 *   down past its grace period (`shutdown`).
 * - `lease_expired`: no worker reported the attempt; the reclaim sweep found
 *   its lease expired. This rule is applied in SQL (jobReclaimExpired in
 *   src/store/sql/leases.ts), which mirrors it; it is here so that it is
 *   written and tested beside the others.
 */
export type AttemptEnding =
  | { kind: "returned"; value: unknown }
  | { kind: "threw"; error: unknown }
  | { kind: "forced"; reason: "timeout" | "lease_lost" | "shutdown" }
  | { kind: "lease_expired" };

/** What an attempt's end is recorded as in `job_executions.outcome` (`lease_lost`: not recorded at all). */
export type AttemptOutcomeLabel = "succeeded" | "failed" | "timeout" | "retry_after" | "interrupted" | "lease_expired" | "lease_lost";

export type DeadReason = DeadLetter["reason"];

/** What becomes of the job after one attempt. */
export interface OutcomeDecision {
  outcome: AttemptOutcomeLabel;
  /**
   * The job's status after the attempt, or `null` to write nothing (the
   * lease was lost: another worker may own the job). A cancel requested
   * while the handler ran turns any status but `succeeded` into `cancelled`;
   * that is read under the row lock of the write (jobEndAttempts), not here.
   */
  nextStatus: "succeeded" | "retrying" | "queued" | "dead" | null;
  /** Wait before the job may run again (for `retrying` and `queued`); 0 otherwise. */
  delayMs: number;
  /** False when the attempt is given back (attempts - 1): a `RetryAfter` or a shutdown is not a failure. */
  countsAttempt: boolean;
  /** Why the job goes to the dead-letter queue, when `nextStatus` is `dead`; null otherwise. */
  deadReason: DeadReason | null;
}

/** What the decision needs of the job besides how the attempt ended. */
export interface OutcomeInputs {
  /** This attempt's number, counted from 1 (the job's `attempts` once claimed). */
  attempt: number;
  maxAttempts: number;
  backoff: ResolvedBackoff;
  /** Source of the backoff's jitter. Default `Math.random`. */
  random?: () => number;
}

/**
 * Decide what one attempt's end does to its job: the one place the
 * retry/dead/hand-back rules live. Pure; the store only fences the write
 * on the execution id and applies the decision.
 *
 * | end                                  | outcome       | next status                              | delay        | attempt counts |
 * |--------------------------------------|---------------|------------------------------------------|--------------|----------------|
 * | returned a value                     | succeeded     | succeeded                                | 0            | yes            |
 * | returned or threw `RetryAfter`       | retry_after   | retrying                                 | its delayMs  | no             |
 * | threw `PermanentError`               | failed        | dead (permanent_error)                   | 0            | yes            |
 * | threw anything else                  | failed        | dead (attempts_exhausted) if spent, else retrying | backoff | yes          |
 * | forced: timeout                      | timeout       | as "threw anything else"                 | backoff      | yes            |
 * | forced: shutdown                     | interrupted   | queued                                   | 0            | no             |
 * | forced: lease lost                   | lease_lost    | nothing written                          | —            | —              |
 * | lease expired (reclaim sweep, SQL)   | lease_expired | dead (attempts_exhausted) if spent, else retrying | 0       | yes            |
 *
 * "Spent" means `attempt >= maxAttempts`. The backoff is drawn for the
 * attempt that just ended (core/backoff.ts).
 */
export function decideOutcome(ending: AttemptEnding, inputs: OutcomeInputs): OutcomeDecision {
  switch (ending.kind) {
    case "returned":
      if (ending.value instanceof RetryAfter) return retryAfter(ending.value);
      return { outcome: "succeeded", nextStatus: "succeeded", delayMs: 0, countsAttempt: true, deadReason: null };
    case "threw":
      if (ending.error instanceof RetryAfter) return retryAfter(ending.error);
      if (ending.error instanceof PermanentError) {
        return { outcome: "failed", nextStatus: "dead", delayMs: 0, countsAttempt: true, deadReason: "permanent_error" };
      }
      return failure("failed", inputs, true);
    case "forced":
      if (ending.reason === "lease_lost") return { outcome: "lease_lost", nextStatus: null, delayMs: 0, countsAttempt: true, deadReason: null };
      if (ending.reason === "shutdown") return { outcome: "interrupted", nextStatus: "queued", delayMs: 0, countsAttempt: false, deadReason: null };
      return failure("timeout", inputs, true);
    case "lease_expired":
      return failure("lease_expired", inputs, false);
  }
}

function retryAfter(request: RetryAfter): OutcomeDecision {
  return { outcome: "retry_after", nextStatus: "retrying", delayMs: request.delayMs, countsAttempt: false, deadReason: null };
}

/** A failed attempt: dead once the attempts are spent, else retried after the backoff (or at once, without it). */
function failure(outcome: "failed" | "timeout" | "lease_expired", inputs: OutcomeInputs, withBackoff: boolean): OutcomeDecision {
  if (inputs.attempt >= inputs.maxAttempts) {
    return { outcome, nextStatus: "dead", delayMs: 0, countsAttempt: true, deadReason: "attempts_exhausted" };
  }
  const delayMs = withBackoff ? retryDelayMs(inputs.backoff, inputs.attempt, inputs.random) : 0;
  return { outcome, nextStatus: "retrying", delayMs, countsAttempt: true, deadReason: null };
}
