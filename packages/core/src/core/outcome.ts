import { retryDelayMs, type ResolvedBackoff } from "./backoff.js";
import { PermanentError, RetryAfter } from "./errors.js";
import { ATTEMPT_END_EVENTS, CANCEL_OBSERVED_AT, type DeadReason, EFFECTS, TRANSITIONS } from "./transitions.js";

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

export type { DeadReason };

/** The events of the transition table that end an attempt the worker reports (the reclaim sweep's included). */
export type AttemptEndEvent = (typeof ATTEMPT_END_EVENTS)[number];

/** What becomes of the job after one attempt. */
export interface OutcomeDecision {
  outcome: AttemptOutcomeLabel;
  /**
   * The event of the transition table the end is, or `null` to write
   * nothing (the lease was lost). What it writes on the job row is the
   * table's (EFFECTS); the fields below are read from it.
   */
  event: AttemptEndEvent | null;
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
      return decided("attempt_succeeded", "succeeded");
    case "threw":
      if (ending.error instanceof RetryAfter) return retryAfter(ending.error);
      if (ending.error instanceof PermanentError) return decided("permanent_error", "failed");
      return failure("failed", inputs);
    case "forced":
      if (ending.reason === "lease_lost") return { outcome: "lease_lost", event: null, nextStatus: null, delayMs: 0, countsAttempt: true, deadReason: null };
      if (ending.reason === "shutdown") return decided("attempt_interrupted", "interrupted");
      return failure("timeout", inputs);
    case "lease_expired":
      return decided(inputs.attempt >= inputs.maxAttempts ? "lease_expired_exhausted" : "lease_expired", "lease_expired");
  }
}

/** What the transition table gives `event`: its next state, whether the attempt counts, and its dead reason. */
function byTable<E extends AttemptEndEvent>(event: E) {
  return {
    event,
    nextStatus: TRANSITIONS[event].running,
    countsAttempt: EFFECTS[event].attempts !== "give_back",
    deadReason: EFFECTS[event].deadReason,
  };
}

/** The decision of `event`, its fields as the table gives them. */
function decided(event: Exclude<AttemptEndEvent, "cancel_observed">, outcome: AttemptOutcomeLabel, delayMs = 0): OutcomeDecision {
  return { outcome, delayMs, ...byTable(event), nextStatus: TRANSITIONS[event].running };
}

function retryAfter(request: RetryAfter): OutcomeDecision {
  return decided("attempt_retry_after", "retry_after", request.delayMs);
}

/** A failed attempt: dead once the attempts are spent, else retried after the backoff. */
function failure(outcome: "failed" | "timeout", inputs: OutcomeInputs): OutcomeDecision {
  if (inputs.attempt >= inputs.maxAttempts) return decided("attempts_exhausted", outcome);
  return decided("attempt_failed", outcome, retryDelayMs(inputs.backoff, inputs.attempt, inputs.random));
}

/** A decision with a requested cancel accounted for (withCancelRequest). */
export interface FinalDecision extends Omit<OutcomeDecision, "outcome" | "nextStatus"> {
  outcome: FinalOutcomeLabel;
  event: AttemptEndEvent | null;
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
  const event = decision.event;
  if (!cancelRequested || event === null || !(CANCEL_OBSERVED_AT as readonly string[]).includes(event)) return decision;
  return { outcome: "cancelled", delayMs: 0, ...byTable("cancel_observed") };
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
