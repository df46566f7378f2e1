import { BULK_ACTION_STATUSES } from "../../core/bulk-actions.js";
import { REQUEUE_ACTIONS } from "../../core/requeues.js";
import { EXECUTION_OUTCOMES, JOB_STATUSES, READY_STATUSES, TERMINAL_STATUSES, type JobStatus } from "../../core/states.js";
import { NO_RECORD, RECORD_KINDS, RECORD_TRANSITIONS, type RecordKind, type RecordMove } from "../../core/step-transitions.js";
import { TRANSITIONS } from "../../core/transitions.js";

// The job state sets of core/states.ts, and the step records' states of
// core/step-transitions.ts, as SQL lists, so that every statement names them
// from the one constant. Not statements themselves, so this module
// is not among the store's queries.

/** Each word of `words` as an SQL literal: `literals(["a"]).a` is `'a'`. */
function literals<T extends string>(words: readonly T[]): Readonly<Record<T, string>> {
  return Object.freeze(Object.fromEntries(words.map((word) => [word, `'${word}'`])) as Record<T, string>);
}

/**
 * Each job state as an SQL literal (`STATE.running` is `'running'`): every
 * statement names a state through this, so that no state word is spelled
 * in SQL but here (test/state-words.test.ts).
 */
export const STATE = literals(JOB_STATUSES);

/** Each attempt outcome (job_executions.outcome) as an SQL literal. */
export const OUTCOME = literals(EXECUTION_OUTCOMES);

/** Each bulk action's status (bulk_actions.status) as an SQL literal. */
export const BULK_STATUS = literals(BULK_ACTION_STATUSES);


/** Each way a job is run again (job_requeues.action) as an SQL literal. */
export const REQUEUE_ACTION = literals(REQUEUE_ACTIONS);

/** `'a', 'b'`: a state set as the inside of an SQL `IN (…)` list. */
function sqlList(statuses: readonly string[]): string {
  return statuses.map((status) => `'${status}'`).join(", ");
}

/** The states a job is claimed from once `run_at` has passed (READY_STATUSES), as `'queued', 'retrying'`. */
export const READY = sqlList(READY_STATUSES);

/** The terminal states other than success, as `'cancelled', 'dead'`: a dependency that ended so counts as failed. */
export const ENDED_UNSUCCESSFULLY = sqlList(TERMINAL_STATUSES.filter((status) => status !== "succeeded"));

/** The states a job never leaves on its own (TERMINAL_STATUSES), as `'succeeded', 'cancelled', 'dead'`. */
export const TERMINAL = sqlList(TERMINAL_STATUSES);

/**
 * The terminal states stored in job_history, by day of finished_at, as
 * `'succeeded', 'cancelled'`. Dead jobs are terminal too, but stay in
 * jobs_dead with their dead letter until it is requeued or pruned.
 */
export const HISTORY = sqlList(TERMINAL_STATUSES.filter((status) => status !== "dead"));

/**
 * The states stored in jobs_live (every state but TERMINAL_STATUSES), as
 * `'waiting', 'queued', …`. A statement on `jobs` that names them is planned
 * over jobs_live alone, and, unlike `status = 'running'`, the list matches no
 * partial index's predicate: the planner finds the rows by id through the
 * primary key, and never walks a state's index, whose dead entries pile up
 * while VACUUM is held back.
 */
export const LIVE = sqlList(JOB_STATUSES.filter((status) => !TERMINAL_STATUSES.includes(status)));

/** The states a cancel applies in (the `cancel` rows of core/transitions.ts), as `'waiting', 'queued', 'retrying', 'running'`. */
export const CANCELLABLE = sqlList(Object.keys(TRANSITIONS.cancel) as JobStatus[]);

/** An event of the step records' table as SQL: the state it leaves a record in, and the recorded states it moves. */
export interface RecordMoveSql {
  /** The state the event leaves a record in, as an SQL literal (`'received'`). */
  to: string;
  /** The states of an existing record the event moves, as the inside of an SQL `IN (…)` list (`'awaiting'`); a record it makes is left out. */
  from: string;
}

/**
 * The step records' transition table (core/step-transitions.ts) as SQL, by
 * kind and event: `RECORD.wait.event_received.to` is `'received'` and
 * `RECORD.wait.event_received.from` is `'awaiting'`. Every statement that
 * writes or matches a record's state (job_steps.state) names it through
 * this. `forgotten` is left out: a forgotten record is deleted.
 */
export const RECORD = Object.freeze(
  Object.fromEntries(
    RECORD_KINDS.map((kind) => [
      kind,
      Object.freeze(
        Object.fromEntries(
          Object.entries(RECORD_TRANSITIONS[kind] as Readonly<Record<string, RecordMove<RecordKind>>>)
            .filter(([, move]) => move.to !== NO_RECORD)
            .map(([event, move]) => [event, { to: `'${move.to}'`, from: sqlList(move.from.filter((from) => from !== NO_RECORD)) }]),
        ),
      ),
    ]),
  ),
) as { readonly [K in RecordKind]: { readonly [E in Exclude<keyof (typeof RECORD_TRANSITIONS)[K], "forgotten">]: RecordMoveSql } };

/**
 * The moves of `events` of records of `kind` as SQL row values, `(from, to)`
 * pairs for `(s.state, excluded.state) IN (…)`: an upsert replaces a record
 * only in a state the event that writes the new one moves.
 */
export function recordMoves<K extends RecordKind>(kind: K, events: readonly Exclude<keyof (typeof RECORD_TRANSITIONS)[K], "forgotten">[]): string {
  const moves = RECORD_TRANSITIONS[kind] as Readonly<Record<string, RecordMove<RecordKind>>>;
  return events
    .flatMap((event) => moves[event as string]!.from.filter((from) => from !== NO_RECORD).map((from) => `('${from}', '${moves[event as string]!.to}')`))
    .join(", ");
}

/**
 * The states of a wait an event may still reach (those `event_received`
 * moves), as `'awaiting'`: job_steps_open_waits_idx's predicate, by which
 * sendEvent finds the waits it matches and the metrics count open waits.
 */
export const OPEN_WAIT = RECORD.wait.event_received.from;

/**
 * The states of records that hold a wake time still to come (a sleep the
 * waker has not woken, a wait whose deadline has not passed), as
 * `'asleep', 'awaiting'`.
 */
export const RECORD_PENDING = [RECORD.sleep.woke.from, RECORD.wait.deadline_passed.from].join(", ");
