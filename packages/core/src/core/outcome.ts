import { retryDelayMs, type ResolvedBackoff } from "./backoff.js";
import { PermanentError, RetryAfter } from "./errors.js";
import type { DeadLetter } from "./model.js";
import { TRANSITIONS } from "./transitions.js";

/**
 * How an attempt ended, before anything is written:
 *
 * - `returned`: the handler returned `value` (a returned `RetryAfter` asks to run again).
 * - `threw`: the handler threw or rejected with `error` (anything, not only Errors).
 * - `forced`: the worker stopped waiting for the handler: its time limit
 *   (`timeout`), its lease was found lost (`lease_lost`), or the worker shut
 *   down past its grace period (`shutdown`).
 * - `lease_expired`: no worker reported the attempt; the reclaim sweep found
 *   its lease expired (JobStore.jobReclaimExpired decides each such job
 *   here, under its row lock).
 */
export type AttemptEnding =
  | { kind: "returned"; value: unknown }
  | { kind: "threw"; error: unknown }
  | { kind: "forced"; reason: "timeout" | "lease_lost" | "shutdown" }
  | { kind: "lease_expired" };

/** What an attempt's end is recorded as in `job_executions.outcome` (`lease_lost`: not recorded at all). */
export type AttemptOutcomeLabel = "succeeded" | "failed" | "timeout" | "retry_after" | "interrupted" | "lease_expired" | "lease_lost";

/** Where a decision leads once a requested cancel is accounted for (withCancelRequest): `cancelled` is one more end. */
export type FinalOutcomeLabel = AttemptOutcomeLabel | "cancelled";

export type DeadReason = DeadLetter["reason"];

/** What becomes of the job after one attempt. */
export interface OutcomeDecision {
  outcome: AttemptOutcomeLabel;
  /**
   * The job's status after the attempt, or `null` to write nothing (the
   * lease was lost: another worker may own the job). A cancel requested
   * while the handler ran turns any status but `succeeded` into `cancelled`
   * (withCancelRequest), applied where the cancel flag is read under the
   * row lock of the write.
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
 * retry/dead/hand-back rules live, each next status read from the
 * transition table (core/transitions.ts). Pure; the store only fences the
 * write on the execution id and applies the decision.
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
 * | lease expired (reclaim sweep)        | lease_expired | dead (attempts_exhausted) if spent, else retrying | 0       | yes            |
 *
 * "Spent" means `attempt >= maxAttempts`. The backoff is drawn for the
 * attempt that just ended (core/backoff.ts).
 */
export function decideOutcome(ending: AttemptEnding, inputs: OutcomeInputs): OutcomeDecision {
  switch (ending.kind) {
    case "returned":
      if (ending.value instanceof RetryAfter) return retryAfter(ending.value);
      return { outcome: "succeeded", nextStatus: TRANSITIONS.attempt_succeeded.running, delayMs: 0, countsAttempt: true, deadReason: null };
    case "threw":
      if (ending.error instanceof RetryAfter) return retryAfter(ending.error);
      if (ending.error instanceof PermanentError) {
        return { outcome: "failed", nextStatus: TRANSITIONS.permanent_error.running, delayMs: 0, countsAttempt: true, deadReason: "permanent_error" };
      }
      return failure("failed", inputs);
    case "forced":
      if (ending.reason === "lease_lost") return { outcome: "lease_lost", nextStatus: null, delayMs: 0, countsAttempt: true, deadReason: null };
      if (ending.reason === "shutdown") {
        return { outcome: "interrupted", nextStatus: TRANSITIONS.attempt_interrupted.running, delayMs: 0, countsAttempt: false, deadReason: null };
      }
      return failure("timeout", inputs);
    case "lease_expired":
      if (inputs.attempt >= inputs.maxAttempts) {
        return { outcome: "lease_expired", nextStatus: TRANSITIONS.lease_expired_exhausted.running, delayMs: 0, countsAttempt: true, deadReason: "attempts_exhausted" };
      }
      return { outcome: "lease_expired", nextStatus: TRANSITIONS.lease_expired.running, delayMs: 0, countsAttempt: true, deadReason: null };
  }
}

function retryAfter(request: RetryAfter): OutcomeDecision {
  return { outcome: "retry_after", nextStatus: TRANSITIONS.attempt_retry_after.running, delayMs: request.delayMs, countsAttempt: false, deadReason: null };
}

/** A failed attempt: dead once the attempts are spent, else retried after the backoff. */
function failure(outcome: "failed" | "timeout", inputs: OutcomeInputs): OutcomeDecision {
  if (inputs.attempt >= inputs.maxAttempts) {
    return { outcome, nextStatus: TRANSITIONS.attempts_exhausted.running, delayMs: 0, countsAttempt: true, deadReason: "attempts_exhausted" };
  }
  const delayMs = retryDelayMs(inputs.backoff, inputs.attempt, inputs.random);
  return { outcome, nextStatus: TRANSITIONS.attempt_failed.running, delayMs, countsAttempt: true, deadReason: null };
}

/** A decision with a requested cancel accounted for (withCancelRequest). */
export interface FinalDecision extends Omit<OutcomeDecision, "outcome" | "nextStatus"> {
  outcome: FinalOutcomeLabel;
  nextStatus: OutcomeDecision["nextStatus"] | "cancelled";
}

/**
 * The cancel rule at an attempt's end: when a cancel was requested while
 * the attempt ran, any end but a success ends the job `cancelled`
 * (`cancel_observed` in the transition table), recorded as `cancelled`,
 * with no delay and no dead-letter entry; the attempt counts (it ran and
 * was cancelled). A success stands, and a lost lease still writes nothing.
 *
 * The flag can be set by another transaction until the write locks the job
 * row, so it must be read under that lock: the reclaim sweep reads it with
 * the rows it locks and decides here; the worker's own writes
 * (jobEndAttempts) read it in their statement, which applies this rule.
 */
export function withCancelRequest(decision: OutcomeDecision, cancelRequested: boolean): FinalDecision {
  if (!cancelRequested || decision.nextStatus === null || decision.nextStatus === "succeeded") return decision;
  return { outcome: "cancelled", nextStatus: TRANSITIONS.cancel_observed.running, delayMs: 0, countsAttempt: true, deadReason: null };
}

/** What the reclaim sweep reads of a job whose lease expired, under the row lock it holds. */
export interface ExpiredLease {
  /** The expired attempt's number (the job's `attempts`). */
  attempt: number;
  maxAttempts: number;
  cancelRequested: boolean;
}

/** An expired lease is retried at once: no backoff is drawn. */
const NO_BACKOFF: ResolvedBackoff = Object.freeze({ baseMs: 0, capMs: 0, jitter: 0 });

/**
 * The reclaim sweep's decision for one job whose lease expired and whose
 * worker never reported: decideOutcome's `lease_expired` rule (retrying at
 * once while attempts are left, else dead with `attempts_exhausted`; the
 * attempt counts), with a requested cancel applied (withCancelRequest).
 */
export function decideExpiredLease(lease: ExpiredLease): FinalDecision {
  const decision = decideOutcome({ kind: "lease_expired" }, { attempt: lease.attempt, maxAttempts: lease.maxAttempts, backoff: NO_BACKOFF });
  return withCancelRequest(decision, lease.cancelRequested);
}
