import { describe, expect, it } from "vitest";
import { JOB_STATUSES } from "./states.js";
import {
  NO_RECORD,
  RECORD_INITIAL_STATES,
  RECORD_KINDS,
  RECORD_STATES,
  RECORD_TRANSITIONS,
  type RecordKind,
  recordSettled,
  recordTransitionOf,
  recordTransitionRows,
} from "./step-transitions.js";
import { STEP_STATES } from "./steps.js";

const rows = recordTransitionRows();
const rowsOf = (kind: RecordKind) => rows.filter((row) => row.kind === kind);

describe("the step records' transition table", () => {
  it("shares no state with a job, and no state between kinds: a state word says what it is the state of", () => {
    const recordStates: string[] = Object.values(RECORD_STATES).flat();
    expect(recordStates.filter((state) => (JOB_STATUSES as readonly string[]).includes(state))).toEqual([]);
    expect(new Set(recordStates).size, "each state belongs to one kind").toBe(recordStates.length);
    expect([...JOB_STATUSES, ...recordStates]).not.toContain(NO_RECORD);
    expect([...STEP_STATES].sort()).toEqual([...recordStates].sort());
  });

  it("moves a record only between states of its own kind, or makes and forgets it", () => {
    for (const row of rows) {
      const states: readonly string[] = [...RECORD_STATES[row.kind], NO_RECORD];
      expect(states, `${row.kind} ${row.event} from`).toContain(row.from);
      expect(states, `${row.kind} ${row.event} to`).toContain(row.to);
      expect(row.from === NO_RECORD && row.to === NO_RECORD, `${row.kind} ${row.event}`).toBe(false);
    }
    expect(new Set(rows.map((row) => row.kind))).toEqual(new Set(RECORD_KINDS));
  });

  it("starts a new record in its kind's initial states, and every state is reached from them", () => {
    for (const kind of RECORD_KINDS) {
      const made = rowsOf(kind).filter((row) => row.from === NO_RECORD);
      expect([...new Set(made.map((row) => row.to))].sort(), kind).toEqual([...RECORD_INITIAL_STATES[kind]].sort());
      const reached = new Set<string>(RECORD_INITIAL_STATES[kind]);
      for (let grew = true; grew; ) {
        grew = false;
        for (const row of rowsOf(kind)) {
          if (reached.has(row.from) && row.to !== NO_RECORD && !reached.has(row.to)) {
            reached.add(row.to);
            grew = true;
          }
        }
      }
      expect([...reached].sort(), kind).toEqual([...RECORD_STATES[kind]].sort());
    }
  });

  it("forgets a record in every state through a rerun, and through nothing else", () => {
    for (const kind of RECORD_KINDS) {
      expect([...RECORD_TRANSITIONS[kind].forgotten.from].sort(), kind).toEqual([...RECORD_STATES[kind]].sort());
      expect(RECORD_TRANSITIONS[kind].forgotten.to).toBe(NO_RECORD);
      expect(rowsOf(kind).filter((row) => row.to === NO_RECORD && row.event !== "forgotten"), kind).toEqual([]);
    }
  });

  it("settles what a later run replays: a completed step, a sleep that woke, a wait that received or timed out", () => {
    const settled = Object.fromEntries(RECORD_KINDS.map((kind) => [kind, RECORD_STATES[kind].filter((state) => recordSettled(kind, state as never))]));
    expect(settled).toEqual({ step: ["completed"], sleep: ["awake"], wait: ["received", "timed_out"] });
  });

  it("reads a step's, a sleep's and a wait's moves as the durable calls make them", () => {
    expect(recordTransitionOf("step", NO_RECORD, "returned")).toBe("completed");
    expect(recordTransitionOf("step", "failed", "returned")).toBe("completed");
    expect(recordTransitionOf("step", "failed", "threw")).toBe("failed");
    // A completed step is never recorded again.
    expect(recordTransitionOf("step", "completed", "returned")).toBeNull();
    expect(recordTransitionOf("step", "completed", "threw")).toBeNull();
    expect(recordTransitionOf("sleep", NO_RECORD, "slept")).toBe("asleep");
    expect(recordTransitionOf("sleep", "asleep", "woke")).toBe("awake");
    expect(recordTransitionOf("sleep", "awake", "woke")).toBeNull();
    expect(recordTransitionOf("wait", NO_RECORD, "wait_opened")).toBe("awaiting");
    expect(recordTransitionOf("wait", NO_RECORD, "event_received")).toBe("received");
    expect(recordTransitionOf("wait", "awaiting", "event_received")).toBe("received");
    expect(recordTransitionOf("wait", "awaiting", "deadline_passed")).toBe("timed_out");
    // An event delivered first wins over the deadline, and the other way round.
    expect(recordTransitionOf("wait", "received", "deadline_passed")).toBeNull();
    expect(recordTransitionOf("wait", "timed_out", "event_received")).toBeNull();
  });
});
