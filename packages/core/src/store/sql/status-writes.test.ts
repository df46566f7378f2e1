import { describe, expect, it } from "vitest";
import { JOB_EVENTS } from "../../core/transitions.js";
import { setList } from "./job-moves.js";
import { cancelAtEnd, outcomeOf, statusWrites } from "./status-writes.js";

const ALL_VALUES = {
  from: "t.status",
  delayMs: "t.delay_ms",
  wakeAt: "t.wake_at",
  error: "t.error",
  result: "t.result",
  lease: { workerId: "$1", executionId: "$2", leaseMs: "$3" },
};

describe("statusWrites", () => {
  it("renders every event of the table, given the values its effects take", () => {
    for (const event of JOB_EVENTS) expect(statusWrites(event, ALL_VALUES).status, event).toMatch(/'[a-z]+'/);
  });

  it("refuses a write whose effects need a value its statement did not give, naming it", () => {
    expect(() => statusWrites("attempt_failed")).toThrow(/attempt_failed needs values\.delayMs/);
    expect(() => statusWrites("claim")).toThrow(/claim needs values\.lease/);
    expect(() => statusWrites("cancel")).toThrow(/give values\.from/);
  });

  it("writes a success's state, result, end and lease only: its execution id and worker stay on the row", () => {
    expect(Object.keys(statusWrites("attempt_succeeded", { result: "$3" })).sort()).toEqual(["finished_at", "lease_expires_at", "result", "status", "updated_at"]);
  });

  it("leaves out of a claim what it does not change: the unique key, and finished_at between live states", () => {
    const set = setList(statusWrites("claim", ALL_VALUES));
    expect(set).not.toMatch(/unique_key|finished_at/);
    expect(set).toMatch(/attempts = j\.attempts \+ 1/);
  });

  it("renders the cancel-at-end rule, the fixed outcomes and the dead reasons from the table", () => {
    expect(cancelAtEnd("p.event", "j.cancel_requested")).toMatch(/^CASE WHEN j\.cancel_requested AND p\.event IN \('attempt_retry_after'.*'attempt_suspended'.*\) THEN 'cancel_observed' ELSE p\.event END$/);
    expect(cancelAtEnd("p.event", "x")).not.toMatch(/'attempt_succeeded'/);
    expect(outcomeOf({ expr: "t.event", events: ["attempt_failed", "cancel_observed"] }, "t.outcome")).toBe("CASE WHEN t.event = 'cancel_observed' THEN 'cancelled' ELSE t.outcome END");
    expect(statusWrites("permanent_error", ALL_VALUES).dead_reason).toBe("'permanent_error'");
    expect(statusWrites("attempt_failed", ALL_VALUES).dead_reason).toBeUndefined();
  });
});
