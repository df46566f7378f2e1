import { describe, expect, it } from "vitest";
import { resolveBackoff } from "./backoff.js";
import { PermanentError, RetryAfter } from "./errors.js";
import { type AttemptEnding, decideExpiredLease, decideOutcome, type OutcomeInputs, withCancelRequest } from "./outcome.js";
import { BULK_ACTION_STATES } from "./bulk-actions.js";
import { JOB_STATUSES, type JobStatus, READY_STATUSES, TERMINAL_STATUSES } from "./states.js";
import { ATTEMPT_END_EVENTS, CANCEL_OBSERVED_AT, EFFECTS, INITIAL_STATUSES, JOB_EVENTS, type JobEvent, TRANSITIONS, transitionOf, transitionRows } from "./transitions.js";

const backoff = resolveBackoff({ baseMs: 1_000, capMs: 60_000, jitter: 0 });
const attemptsLeft: OutcomeInputs = { attempt: 1, maxAttempts: 3, backoff };
const attemptsSpent: OutcomeInputs = { attempt: 3, maxAttempts: 3, backoff };

/** An attempt's end that leads to each attempt-ending event, as the worker or the reclaim sweep would decide it. */
const CASES: Record<(typeof ATTEMPT_END_EVENTS)[number], { ending: AttemptEnding; inputs: OutcomeInputs; cancelRequested: boolean }> = {
  attempt_succeeded: { ending: { kind: "returned", value: 1 }, inputs: attemptsSpent, cancelRequested: true },
  attempt_retry_after: { ending: { kind: "returned", value: new RetryAfter(5_000) }, inputs: attemptsSpent, cancelRequested: false },
  attempt_failed: { ending: { kind: "threw", error: new Error("boom") }, inputs: attemptsLeft, cancelRequested: false },
  attempts_exhausted: { ending: { kind: "forced", reason: "timeout" }, inputs: attemptsSpent, cancelRequested: false },
  permanent_error: { ending: { kind: "threw", error: new PermanentError("gone") }, inputs: attemptsLeft, cancelRequested: false },
  attempt_interrupted: { ending: { kind: "forced", reason: "shutdown" }, inputs: attemptsSpent, cancelRequested: false },
  lease_expired: { ending: { kind: "lease_expired" }, inputs: attemptsLeft, cancelRequested: false },
  lease_expired_exhausted: { ending: { kind: "lease_expired" }, inputs: attemptsSpent, cancelRequested: false },
  cancel_observed: { ending: { kind: "lease_expired" }, inputs: attemptsSpent, cancelRequested: true },
};

/** Every way an attempt can end, on an attempt with attempts left and on the last one, with and without a cancel requested. */
function everyEnding(): Array<{ ending: AttemptEnding; inputs: OutcomeInputs; cancelRequested: boolean }> {
  const endings: AttemptEnding[] = [
    { kind: "returned", value: "ok" },
    { kind: "returned", value: new RetryAfter(1_000) },
    { kind: "threw", error: new RetryAfter(1_000) },
    { kind: "threw", error: new PermanentError("gone") },
    { kind: "threw", error: new Error("boom") },
    { kind: "threw", error: undefined },
    { kind: "forced", reason: "timeout" },
    { kind: "forced", reason: "shutdown" },
    { kind: "forced", reason: "lease_lost" },
    { kind: "lease_expired" },
  ];
  return endings.flatMap((ending) =>
    [attemptsLeft, attemptsSpent].flatMap((inputs) => [false, true].map((cancelRequested) => ({ ending, inputs, cancelRequested }))),
  );
}

const decideFinal = ({ ending, inputs, cancelRequested }: { ending: AttemptEnding; inputs: OutcomeInputs; cancelRequested: boolean }) =>
  withCancelRequest(decideOutcome(ending, inputs), cancelRequested);

describe("the transition table against decideOutcome", () => {
  it("every attempt-ending row is what decideOutcome (with a requested cancel applied) decides for its case", () => {
    for (const event of ATTEMPT_END_EVENTS) {
      expect(Object.keys(TRANSITIONS[event]), `${event} applies to running jobs only`).toEqual(["running"]);
      expect(decideFinal(CASES[event]).nextStatus, event).toBe(transitionOf("running", event));
    }
  });

  it("every decision decideOutcome can make is a row of the table, and a lost lease moves nothing", () => {
    const targets = new Set(ATTEMPT_END_EVENTS.map((event) => transitionOf("running", event)));
    for (const input of everyEnding()) {
      const decision = decideFinal(input);
      if (input.ending.kind === "forced" && input.ending.reason === "lease_lost") {
        expect(decision.nextStatus).toBeNull();
        continue;
      }
      expect(targets.has(decision.nextStatus as JobStatus), JSON.stringify(input)).toBe(true);
    }
  });

  it("a requested cancel turns every end but a success into cancelled, and leaves a lost lease writing nothing", () => {
    for (const input of everyEnding().filter((i) => i.cancelRequested)) {
      const decision = decideFinal(input);
      const alone = decideOutcome(input.ending, input.inputs);
      if (alone.nextStatus === null || alone.nextStatus === "succeeded") expect(decision).toEqual(alone);
      else expect(decision).toEqual({ outcome: "cancelled", event: "cancel_observed", nextStatus: transitionOf("running", "cancel_observed"), delayMs: 0, countsAttempt: true, deadReason: null });
    }
  });

  it("the expired-lease rule the reclaim sweep applies: retrying at once while attempts are left, else dead; cancelled when asked", () => {
    const expired = (inputs: OutcomeInputs, cancelRequested: boolean) => {
      const decision = decideExpiredLease({ attempt: inputs.attempt, maxAttempts: inputs.maxAttempts, cancelRequested });
      expect(decision).toEqual(decideFinal({ ending: { kind: "lease_expired" }, inputs, cancelRequested }));
      return decision;
    };
    expect(expired(attemptsLeft, false)).toEqual({ outcome: "lease_expired", event: "lease_expired", nextStatus: "retrying", delayMs: 0, countsAttempt: true, deadReason: null });
    expect(expired(attemptsSpent, false)).toEqual({ outcome: "lease_expired", event: "lease_expired_exhausted", nextStatus: "dead", delayMs: 0, countsAttempt: true, deadReason: "attempts_exhausted" });
    expect(expired(attemptsLeft, true)).toMatchObject({ outcome: "cancelled", event: "cancel_observed", nextStatus: "cancelled" });
  });
});

describe("the transition table against the lifecycle", () => {
  const rows = transitionRows();

  it("has one row per (state, event) pair, every state and event a known one", () => {
    expect(new Set(rows.map((row) => `${row.from}:${row.event}`)).size).toBe(rows.length);
    for (const row of rows) {
      expect(JOB_STATUSES).toContain(row.from);
      expect(JOB_STATUSES).toContain(row.to);
      expect(JOB_EVENTS).toContain(row.event);
    }
  });

  it("claims exactly the ready states, into running", () => {
    expect(rows.filter((row) => row.event === "claim")).toEqual(READY_STATUSES.map((from) => ({ from, event: "claim", to: "running" })));
    expect(rows.filter((row) => row.to === "running" && row.from !== "running").map((row) => row.event)).toEqual(["claim", "claim"]);
  });

  it("cancels every unfinished state (a running one only asks) and refuses a finished one", () => {
    for (const status of JOB_STATUSES) {
      const expected = TERMINAL_STATUSES.includes(status) ? null : status === "running" ? "running" : "cancelled";
      expect(transitionOf(status, "cancel"), status).toBe(expected);
    }
  });

  it("leaves a finished state only by a requeue or a rerun: of the job itself, or of the dependency that ended it", () => {
    const leaving = rows.filter((row) => TERMINAL_STATUSES.includes(row.from) && row.to !== row.from);
    expect([...new Set(leaving.map((row) => row.event))].sort()).toEqual<JobEvent[]>(["dependency_reopened", "requeue", "rerun_from_step"]);
    expect(rows.filter((row) => row.event === "rerun_from_step" && TERMINAL_STATUSES.includes(row.from)).map((row) => row.from)).toEqual(["dead"]);
    expect(transitionOf("succeeded", "requeue")).toBeNull();
    expect(rows.filter((row) => row.from === "succeeded")).toEqual([]);
  });

  it("reaches every state from the initial ones, and every unfinished state has a way on", () => {
    const reached = new Set<JobStatus>(INITIAL_STATUSES);
    for (let grew = true; grew; ) {
      grew = false;
      for (const row of rows) {
        if (reached.has(row.from) && !reached.has(row.to)) {
          reached.add(row.to);
          grew = true;
        }
      }
    }
    expect([...reached].sort()).toEqual([...JOB_STATUSES].sort());
    for (const status of JOB_STATUSES.filter((s) => !TERMINAL_STATUSES.includes(s))) {
      expect(rows.some((row) => row.from === status && row.to !== status), status).toBe(true);
    }
  });

  it("is what a bulk cancel and a bulk retry of dead jobs select", () => {
    expect([...BULK_ACTION_STATES.cancel].sort()).toEqual(Object.keys(TRANSITIONS.cancel).sort());
    expect(BULK_ACTION_STATES.retry.filter((status) => transitionOf(status, "requeue") !== null)).toEqual(["dead"]);
  });

  it("ends attempts only of running jobs, and every end leaves running", () => {
    for (const row of rows.filter((r) => (ATTEMPT_END_EVENTS as readonly string[]).includes(r.event))) {
      expect(row.from).toBe("running");
      expect(row.to).not.toBe("running");
    }
  });
});

describe("the effects of each event", () => {
  const reachesDead = (event: JobEvent) => Object.values(TRANSITIONS[event]).includes("dead");

  it("give a dead-letter reason exactly to the events that move a job to dead", () => {
    for (const event of JOB_EVENTS) expect(EFFECTS[event].deadReason !== null, event).toBe(reachesDead(event));
  });

  it("take a hold only on a claim, and end it with every end of an attempt: on the row for a success, released otherwise", () => {
    expect(JOB_EVENTS.filter((event) => EFFECTS[event].hold === "take")).toEqual(["claim"]);
    for (const event of [...ATTEMPT_END_EVENTS, "attempt_suspended" as const]) {
      expect(EFFECTS[event].hold, event).toBe(event === "attempt_succeeded" ? "record" : "release");
    }
  });

  it("are what decideOutcome reports: an attempt given back is not counted, and a dead end names its reason", () => {
    for (const input of everyEnding()) {
      const decision = decideFinal(input);
      if (decision.event === null) continue;
      expect(decision.countsAttempt, decision.event).toBe(EFFECTS[decision.event].attempts !== "give_back");
      expect(decision.deadReason, decision.event).toBe(EFFECTS[decision.event].deadReason);
      expect(decision.nextStatus, decision.event).toBe(transitionOf("running", decision.event));
    }
  });

  it("turn every end of an attempt but a success into cancel_observed when a cancel was asked for", () => {
    const ends = [...ATTEMPT_END_EVENTS, "attempt_suspended"].filter((event) => event !== "attempt_succeeded" && event !== "cancel_observed");
    expect([...CANCEL_OBSERVED_AT].sort()).toEqual(ends.sort());
  });
});
