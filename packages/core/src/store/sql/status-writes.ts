import { type JobStatus, TERMINAL_STATUSES } from "../../core/states.js";
import { CANCEL_OBSERVED_AT, EFFECTS, type JobEvent, TRANSITIONS, type TransitionEffects } from "../../core/transitions.js";
import type { JobColumn, JobWrites } from "./job-moves.js";
import { TERMINAL } from "./status-sets.js";

// The one builder of every status write's SET list: the claim, both
// completions, the reclaim sweep's ends, suspend, wake, cancel, requeue,
// rerun and the dependents' settle each render what they write from the
// transition table of core/transitions.ts (TRANSITIONS for the state,
// EFFECTS for the rest). A statement supplies only the values an effect
// takes (a delay, an error, a result, a lease) and how it reads its rows'
// events; it decides nothing. Not statements themselves, so this module is
// not among the store's queries.

/** A write's event: one for every row, or an SQL expression naming one of `events` per row. */
export type WriteEvent = JobEvent | { readonly expr: string; readonly events: readonly JobEvent[] };

/** The values a write's effects take, as SQL expressions; each is needed only by the effects that read it. */
export interface WriteValues {
  /** The row's state before the write, for an event with rows from several states (read from the statement's own CTE, never `j`). */
  from?: string;
  /** `after_delay`: ms from `at`. */
  delayMs?: string;
  /** `wake_at`: the time. */
  wakeAt?: string;
  /** `lastError: given`: the error (jsonb), or NULL to keep the job's last one. */
  error?: string;
  /** `result: given`: the result (jsonb). */
  result?: string;
  /** `hold: take`: the claiming worker, the attempt's execution id and the lease in ms (float8). */
  lease?: { readonly workerId: string; readonly executionId: string; readonly leaseMs: string };
  /** The write's time. Default `now()`. */
  at?: string;
}

const eventsOf = (event: WriteEvent): readonly JobEvent[] => (typeof event === "string" ? [event] : event.events);

/** `'a', 'b'`: words as the inside of an SQL `IN (…)` list. */
const sqlList = (words: readonly string[]): string => words.map((word) => `'${word}'`).join(", ");

/** The state `event` moves a row in `from` to, as SQL; `otherwise` where the event has no row for that state (default NULL, which status refuses). */
function stateAfterOne(event: JobEvent, from: string | undefined, otherwise: string): string {
  const rows = Object.entries(TRANSITIONS[event]) as Array<[JobStatus, JobStatus]>;
  const targets = new Set(rows.map(([, to]) => to));
  if (targets.size === 1 && (from === undefined || otherwise === "NULL")) return `'${rows[0]![1]}'`;
  if (from === undefined) throw new Error(`status write: event ${event} has rows from several states; give values.from`);
  return `CASE ${from} ${rows.map(([state, to]) => `WHEN '${state}' THEN '${to}'`).join(" ")} ELSE ${otherwise} END`;
}

/**
 * The state a write moves each row to, as SQL over the statement's CTEs:
 * the transition table's row for (its event, `from`), else `otherwise`.
 */
export function stateAfter(event: WriteEvent, from?: string, otherwise = "NULL"): string {
  if (typeof event === "string") return stateAfterOne(event, from, otherwise);
  return `CASE ${event.expr} ${event.events.map((e) => `WHEN '${e}' THEN ${stateAfterOne(e, from, otherwise)}`).join(" ")} ELSE ${otherwise} END`;
}

/**
 * One column's value, per event: each event's expression (undefined: the
 * event leaves the column), rendered once when the events agree, else as a
 * CASE over the event that leaves the column as it was for the others.
 */
function byEvent(event: WriteEvent, column: JobColumn, valueOf: (effects: TransitionEffects, e: JobEvent) => string | undefined): string | undefined {
  const values = eventsOf(event).map((e) => [e, valueOf(EFFECTS[e], e)] as const);
  const distinct = [...new Set(values.map(([, value]) => value))];
  if (distinct.length === 1) return distinct[0];
  if (typeof event === "string") throw new Error("unreachable: one event has one value");
  const arms = distinct
    .filter((value): value is string => value !== undefined)
    .map((value) => `WHEN ${event.expr} IN (${sqlList(values.filter(([, v]) => v === value).map(([e]) => e))}) THEN ${value}`);
  return `CASE ${arms.join(" ")} ELSE j.${column} END`;
}

/** Whether `event` moves a job out of `dead` (a requeue, a rerun, a reopened dependency). */
const leavesDead = (event: JobEvent): boolean => Object.entries(TRANSITIONS[event]).some(([from, to]) => from === "dead" && to !== "dead");

/** A value the write needs and its statement did not give. */
function needed(value: string | undefined, name: keyof WriteValues, event: JobEvent): string {
  if (value === undefined) throw new Error(`status write: event ${event} needs values.${name}`);
  return value;
}

/**
 * Everything a status write sets, for `event` on rows in `values.from`:
 * the state, `finished_at` (set on entering a terminal state, cleared on
 * entering a live one), `updated_at`, and each effect of the table. Over the row as it
 * was (`j`) and the statement's CTEs.
 */
export function statusWrites(event: WriteEvent, values: WriteValues = {}): JobWrites {
  const at = values.at ?? "now()";
  const status = stateAfter(event, values.from);
  const lease = (e: JobEvent) => {
    if (values.lease === undefined) throw new Error(`status write: event ${e} needs values.lease`);
    return values.lease;
  };
  const writes: Partial<Record<JobColumn, string | undefined>> = {
    status,
    attempts: byEvent(event, "attempts", (fx) =>
      ({ count: "j.attempts + 1", give_back: "j.attempts - 1", reset: "0", keep: undefined })[fx.attempts],
    ),
    run_at: byEvent(event, "run_at", (fx, e) => {
      switch (fx.runAt) {
        case "now":
          return at;
        case "not_before_now":
          return `greatest(j.run_at, ${at})`;
        case "after_delay":
          return `${at} + ${needed(values.delayMs, "delayMs", e)}::float8 * interval '1 millisecond'`;
        case "wake_at":
          return needed(values.wakeAt, "wakeAt", e);
        case "keep":
          return undefined;
      }
    }),
    finished_at: finishedAt(event, status, at),
    locked_by: byEvent(event, "locked_by", (fx, e) => (fx.hold === "take" ? lease(e).workerId : fx.hold === "release" ? "NULL" : undefined)),
    current_execution_id: byEvent(event, "current_execution_id", (fx, e) =>
      fx.hold === "take" ? lease(e).executionId : fx.hold === "release" ? "NULL" : undefined,
    ),
    lease_expires_at: byEvent(event, "lease_expires_at", (fx, e) =>
      fx.hold === "take" ? `${at} + ${lease(e).leaseMs}::float8 * interval '1 millisecond'` : fx.hold === "keep" ? undefined : "NULL",
    ),
    started_at: byEvent(event, "started_at", (fx) => (fx.hold === "take" ? at : undefined)),
    last_error: byEvent(event, "last_error", (fx, e) =>
      fx.lastError === "given" ? `coalesce(${needed(values.error, "error", e)}, j.last_error)` : fx.lastError === "clear" ? "NULL" : undefined,
    ),
    result: byEvent(event, "result", (fx, e) => (fx.result === "given" ? needed(values.result, "result", e) : undefined)),
    cancel_requested: byEvent(event, "cancel_requested", (fx) => ({ request: "true", clear: "false", keep: undefined })[fx.cancel]),
    // A job's row in jobs_dead is its dead letter: an event that kills it gives the row a letter (a fresh id
    // and its reason), and one that brings it back from dead takes the letter away.
    dead_letter_id: byEvent(event, "dead_letter_id", (fx, e) => (fx.deadReason !== null ? "{{schema}}.uuid_v7()" : leavesDead(e) ? "NULL" : undefined)),
    dead_reason: byEvent(event, "dead_reason", (fx, e) => (fx.deadReason !== null ? `'${fx.deadReason}'` : leavesDead(e) ? "NULL" : undefined)),
    unique_key: byEvent(event, "unique_key", (fx) => (fx.uniqueKey === "kept" ? "j.unique_key" : undefined)),
    updated_at: at,
  };
  return Object.fromEntries(Object.entries(writes).filter(([, value]) => value !== undefined)) as JobWrites;
}

/** `finished_at`: the write's time where the row enters a terminal state, NULL where it does not (left alone between live states). */
function finishedAt(event: WriteEvent, status: string, at: string): string | undefined {
  const rows = eventsOf(event).flatMap((e) => Object.entries(TRANSITIONS[e]) as Array<[JobStatus, JobStatus]>);
  const isTerminal = (state: JobStatus) => TERMINAL_STATUSES.includes(state);
  // From live states to live states only: it was NULL and stays so.
  if (rows.every(([from, to]) => !isTerminal(from) && !isTerminal(to))) return undefined;
  const terminal = rows.map(([, to]) => isTerminal(to));
  if (terminal.every(Boolean)) return at;
  if (!terminal.some(Boolean)) return "NULL";
  return `CASE WHEN (${status}) IN (${TERMINAL}) THEN ${at} END`;
}

/**
 * The cancel-at-end rule (core/transitions.ts CANCEL_OBSERVED_AT) over an
 * attempt's end `event` and the job's flag `cancelRequested` read under the
 * write's row lock: `cancel_observed` where it applies, else the event.
 */
export function cancelAtEnd(event: string, cancelRequested: string): string {
  return `CASE WHEN ${cancelRequested} AND ${event} IN (${sqlList(CANCEL_OBSERVED_AT)}) THEN 'cancel_observed' ELSE ${event} END`;
}

/** The outcome an attempt's end records: the event's own (EFFECTS outcome), else `given`. */
export function outcomeOf(event: WriteEvent, given: string): string {
  const fixed = eventsOf(event).filter((e) => EFFECTS[e].outcome !== null);
  if (fixed.length === 0) return given;
  if (typeof event === "string") return `'${EFFECTS[event].outcome}'`;
  return `CASE ${fixed.map((e) => `WHEN ${event.expr} = '${e}' THEN '${EFFECTS[e].outcome}'`).join(" ")} ELSE ${given} END`;
}
