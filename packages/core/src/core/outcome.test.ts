import { describe, expect, it } from "vitest";
import { resolveBackoff } from "./backoff.js";
import { PermanentError, RetryAfter } from "./errors.js";
import { type AttemptEnding, decideOutcome, type OutcomeInputs } from "./outcome.js";

const backoff = resolveBackoff({ baseMs: 1_000, capMs: 60_000, jitter: 0 });
/** Attempt 2 of 3: a failure is retried after 2 s (1 s doubled once). */
const midway: OutcomeInputs = { attempt: 2, maxAttempts: 3, backoff };
/** Attempt 3 of 3: a failure is the last. */
const last: OutcomeInputs = { attempt: 3, maxAttempts: 3, backoff };

const decide = (ending: AttemptEnding, inputs = midway) => decideOutcome(ending, inputs);

describe("decideOutcome", () => {
  it("a returned value succeeds, even on the last attempt", () => {
    const succeeded = { outcome: "succeeded", event: "attempt_succeeded", nextStatus: "succeeded", delayMs: 0, countsAttempt: true, deadReason: null };
    expect(decide({ kind: "returned", value: { ok: 1 } })).toEqual(succeeded);
    expect(decide({ kind: "returned", value: undefined }, last)).toEqual(succeeded);
  });

  it("RetryAfter, returned or thrown, retries after its delay and gives the attempt back, even when attempts are spent", () => {
    const retry = { outcome: "retry_after", event: "attempt_retry_after", nextStatus: "retrying", delayMs: 5_000, countsAttempt: false, deadReason: null };
    expect(decide({ kind: "returned", value: new RetryAfter(5_000) })).toEqual(retry);
    expect(decide({ kind: "threw", error: new RetryAfter(5_000) }, last)).toEqual(retry);
  });

  it("a PermanentError goes to the dead-letter queue at once", () => {
    expect(decide({ kind: "threw", error: new PermanentError("gone") })).toEqual({
      outcome: "failed",
      event: "permanent_error",
      nextStatus: "dead",
      delayMs: 0,
      countsAttempt: true,
      deadReason: "permanent_error",
    });
  });

  it("any other throw retries after the backoff of this attempt", () => {
    for (const error of [new Error("boom"), "a string", undefined, null]) {
      expect(decide({ kind: "threw", error })).toEqual({ outcome: "failed", event: "attempt_failed", nextStatus: "retrying", delayMs: 2_000, countsAttempt: true, deadReason: null });
    }
  });

  it("the backoff's jitter comes from the given source", () => {
    const jittered = resolveBackoff({ baseMs: 1_000, capMs: 1_000, jitter: 0.5 });
    expect(decide({ kind: "threw", error: new Error("boom") }, { attempt: 1, maxAttempts: 3, backoff: jittered, random: () => 1 }).delayMs).toBe(500);
  });

  it("a throw on the last attempt goes to the dead-letter queue, attempts exhausted", () => {
    const dead = { outcome: "failed", event: "attempts_exhausted", nextStatus: "dead", delayMs: 0, countsAttempt: true, deadReason: "attempts_exhausted" };
    expect(decide({ kind: "threw", error: new Error("boom") }, last)).toEqual(dead);
    // Past the limit (it was lowered, or a requeue from dead ran out again): dead as well.
    expect(decide({ kind: "threw", error: new Error("boom") }, { ...last, attempt: 4 })).toEqual(dead);
  });

  it("a timeout is a failure recorded as timeout", () => {
    expect(decide({ kind: "forced", reason: "timeout" })).toEqual({ outcome: "timeout", event: "attempt_failed", nextStatus: "retrying", delayMs: 2_000, countsAttempt: true, deadReason: null });
    expect(decide({ kind: "forced", reason: "timeout" }, last)).toEqual({
      outcome: "timeout",
      event: "attempts_exhausted",
      nextStatus: "dead",
      delayMs: 0,
      countsAttempt: true,
      deadReason: "attempts_exhausted",
    });
  });

  it("a shutdown hands the job back at once and gives the attempt back, even when attempts are spent", () => {
    const handedBack = { outcome: "interrupted", event: "attempt_interrupted", nextStatus: "queued", delayMs: 0, countsAttempt: false, deadReason: null };
    expect(decide({ kind: "forced", reason: "shutdown" })).toEqual(handedBack);
    expect(decide({ kind: "forced", reason: "shutdown" }, last)).toEqual(handedBack);
  });

  it("a lost lease writes nothing", () => {
    expect(decide({ kind: "forced", reason: "lease_lost" }, last)).toMatchObject({ outcome: "lease_lost", event: null, nextStatus: null });
  });

  it("an expired lease (the reclaim sweep's rule) retries at once, or is dead when attempts are spent", () => {
    expect(decide({ kind: "lease_expired" })).toEqual({ outcome: "lease_expired", event: "lease_expired", nextStatus: "retrying", delayMs: 0, countsAttempt: true, deadReason: null });
    expect(decide({ kind: "lease_expired" }, last)).toEqual({
      outcome: "lease_expired",
      event: "lease_expired_exhausted",
      nextStatus: "dead",
      delayMs: 0,
      countsAttempt: true,
      deadReason: "attempts_exhausted",
    });
  });
});
