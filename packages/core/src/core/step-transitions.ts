// The state machine of a durable job's records (job_steps) as data: for
// each kind of record (a step, a sleep, a wait for an event), its states and
// the events that make, move or forget a record. Every rule that picks or
// reads a record's state reads it from here (worker/durable-run.ts,
// testing/memory-durable.ts, and the SQL of store/sql/steps.ts, rendered
// through store/sql/status-sets.ts); step-transitions.test.ts checks the
// table. No record state is a job state (core/states.ts): the job of an
// `awaiting` wait is `sleeping`, and a word in a list of states says which
// of the two it is.
//
//   step:  (none) ─(returned)─▶ completed             (none) ─(threw)─▶ failed
//          failed ─(returned)─▶ completed             failed ─(threw)─▶ failed
//   sleep: (none) ─(slept)─▶ asleep ─(woke)─▶ awake
//   wait:  (none) ─(wait_opened)─▶ awaiting ─(event_received)─▶ received
//          (none) ─(event_received)─▶ received        awaiting ─(deadline_passed)─▶ timed_out
//   every record ─(forgotten)─▶ (none)
//
// A record that is deleted with its job (jobs_forget) leaves no state behind
// and is not an event here.

/** The states of each kind of record. */
export const RECORD_STATES = {
  step: ["completed", "failed"],
  sleep: ["asleep", "awake"],
  wait: ["awaiting", "received", "timed_out"],
} as const;

/** The kind of record a durable call makes: `step`, `sleep` or `wait`. */
export type RecordKind = keyof typeof RECORD_STATES;

/** Every `RecordKind`. */
export const RECORD_KINDS = Object.keys(RECORD_STATES) as readonly RecordKind[];

/** A state of a record of kind `K`. */
export type RecordState<K extends RecordKind = RecordKind> = (typeof RECORD_STATES)[K][number];

/**
 * Where a record is before an event makes it, and after one forgets it: the
 * job has no record of that name. Not a state of any record.
 */
export const NO_RECORD = "absent";
/** `NO_RECORD`'s type. */
export type NoRecord = typeof NO_RECORD;

/** One event of a record's kind: the states it applies in (`NO_RECORD`: it makes the record) and the state it leaves the record in. */
export interface RecordMove<K extends RecordKind> {
  from: readonly (RecordState<K> | NoRecord)[];
  to: RecordState<K> | NoRecord;
}

/** The states a new record of each kind starts in: the `to` of every event that applies to `NO_RECORD`. */
export const RECORD_INITIAL_STATES = {
  step: ["completed", "failed"],
  sleep: ["asleep"],
  wait: ["awaiting", "received"],
} as const satisfies { readonly [K in RecordKind]: readonly RecordState<K>[] };

/**
 * Every event that makes, moves or forgets a record, by kind:
 * `RECORD_TRANSITIONS[kind][event]` is the states the event applies in and
 * the state it leaves the record in. A (state, event) pair with no row does
 * not move the record: a completed step is never recorded again.
 */
export const RECORD_TRANSITIONS = {
  step: {
    /**
     * The step's function returned (a transactional step's with its
     * transaction): its result is recorded and replayed by every later run
     * of the job. A failed call's record is replaced.
     */
    returned: { from: [NO_RECORD, "failed"], to: "completed" },
    /** The step's last call threw and failed the attempt: its error is kept for display until a later run's record replaces it. */
    threw: { from: [NO_RECORD, "failed"], to: "failed" },
    /** A rerun from this step or an earlier record (`rerunFromStep`) deletes the record: the step runs anew. */
    forgotten: { from: ["completed", "failed"], to: NO_RECORD },
  },
  sleep: {
    /** The handler slept (`sleep`): the wake time is recorded and the attempt suspends. */
    slept: { from: [NO_RECORD], to: "asleep" },
    /** The sleep's time came and the waker queued its job: a later run returns at once. */
    woke: { from: ["asleep"], to: "awake" },
    /** A rerun from this sleep or an earlier record deletes it: the sleep starts again. */
    forgotten: { from: ["asleep", "awake"], to: NO_RECORD },
  },
  wait: {
    /** The handler began waiting for an event (`waitForEvent`) that had not been sent: the wait is recorded and the attempt suspends. */
    wait_opened: { from: [NO_RECORD], to: "awaiting" },
    /**
     * A matching event was sent: found when the handler reached the wait
     * (a new record), or delivered to the open wait by `sendEvent`, which
     * queues its job. Its payload is recorded and returned by every later run.
     */
    event_received: { from: [NO_RECORD, "awaiting"], to: "received" },
    /** The wait's deadline passed with no event: every later run's wait returns null. */
    deadline_passed: { from: ["awaiting"], to: "timed_out" },
    /** A rerun from this wait or an earlier record deletes it: the wait starts again, with a new deadline. */
    forgotten: { from: ["awaiting", "received", "timed_out"], to: NO_RECORD },
  },
} as const satisfies { readonly [K in RecordKind]: Readonly<Record<string, RecordMove<K>>> };

/** An event of records of kind `K`: one of the keys of `RECORD_TRANSITIONS[K]`. */
export type RecordEvent<K extends RecordKind = RecordKind> = keyof (typeof RECORD_TRANSITIONS)[K] & string;

/** One row of the table: `event` moves a record of `kind` in `from` to `to`. */
export interface RecordTransition {
  kind: RecordKind;
  event: string;
  from: RecordState | NoRecord;
  to: RecordState | NoRecord;
}

/** Every row of the table, kind by kind and event by event. */
export function recordTransitionRows(): RecordTransition[] {
  return RECORD_KINDS.flatMap((kind) =>
    Object.entries(RECORD_TRANSITIONS[kind] as Readonly<Record<string, RecordMove<RecordKind>>>).flatMap(([event, move]) =>
      move.from.map((from) => ({ kind, event, from, to: move.to })),
    ),
  );
}

/** The state `event` moves a record of `kind` in `from` to (`from` `NO_RECORD`: the record it makes), or null when the table has no such row. */
export function recordTransitionOf<K extends RecordKind>(kind: K, from: RecordState<K> | NoRecord, event: RecordEvent<K>): RecordState<K> | NoRecord | null {
  const move = (RECORD_TRANSITIONS[kind] as Readonly<Record<string, RecordMove<K>>>)[event];
  return move && move.from.includes(from) ? move.to : null;
}

/** The settled states of each kind (see `recordSettled`), from the table. */
const SETTLED = new Map(
  RECORD_KINDS.map((kind) => [
    kind,
    new Set<string>(
      RECORD_STATES[kind].filter((state) => recordTransitionRows().every((row) => row.kind !== kind || row.from !== state || row.event === "forgotten")),
    ),
  ]),
);

/**
 * True when a record of `kind` in `state` is settled: no event but
 * `forgotten` moves it, so a later run of the job returns it as it is (a
 * completed step's result, a sleep that woke, a wait's event or its null).
 */
export function recordSettled<K extends RecordKind>(kind: K, state: RecordState<K>): boolean {
  return SETTLED.get(kind)!.has(state);
}
