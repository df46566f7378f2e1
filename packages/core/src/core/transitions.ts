import type { ExecutionOutcome, JobStatus } from "./states.js";

// The job state machine as data: for each event, the states it applies in
// and the state it moves a job to (TRANSITIONS), and what else it writes on
// the job row (EFFECTS). Every rule that picks a job's next state
// reads it from here (decideOutcome and withCancelRequest in outcome.ts,
// settleDependent in dependents.ts, and the SQL rendered from it: every
// status write's SET list comes from store/sql/status-writes.ts);
// outcome.test.ts checks each row against them and against the state sets
// of states.ts. A (state, event) pair with no row does not move the job:
// the event is refused there (a cancel of a finished job) or cannot happen.
//
//   enqueue ─▶ waiting ─(dependencies met)─▶ queued ─(claim)─▶ running ─▶ succeeded
//                 │                            ▲  ▲               ├─▶ retrying ─(claim)─▶ running
//                 ├─(dependency failed)─▶ dead │  └─(shutdown)────┤
//                 └─(dependency cancelled, cancel)─▶ cancelled    ├─▶ dead      (attempts spent, permanent error)
//   dead ─(requeue)─▶ queued                                      └─▶ cancelled (cancel requested, seen at the attempt's end)
//   waiting | queued | retrying | sleeping ─(cancel)─▶ cancelled;  running ─(cancel)─▶ running, cancel requested
//   running ─(sleep, waitForEvent)─▶ sleeping ─(its time, its event)─▶ queued
//   dead | sleeping | queued | retrying ─(rerun from a step)─▶ queued

/** The states a new job starts in: `waiting` when it has dependencies that have not ended, else `queued`. */
export const INITIAL_STATUSES: readonly JobStatus[] = ["queued", "waiting"];

/**
 * Every transition Conveyor makes, by event: `TRANSITIONS[event][from]` is
 * the state the event moves a job in `from` to. Read it with `transitionOf`.
 */
export const TRANSITIONS = {
  /** A worker claims a job whose `run_at` has passed: a new attempt, a new execution id and a lease (jobClaim). */
  claim: { queued: "running", retrying: "running" },
  /** The handler returned a value (not a `RetryAfter`). */
  attempt_succeeded: { running: "succeeded" },
  /** The handler returned or threw a `RetryAfter`: run again after its delay; the attempt is given back. */
  attempt_retry_after: { running: "retrying" },
  /** The handler threw, or ran past its timeout, with attempts left: run again after the backoff. */
  attempt_failed: { running: "retrying" },
  /** The handler threw, or ran past its timeout, on its last attempt: to the dead-letter queue (`attempts_exhausted`). */
  attempts_exhausted: { running: "dead" },
  /** The handler threw a `PermanentError`: to the dead-letter queue at once (`permanent_error`). */
  permanent_error: { running: "dead" },
  /** The worker shut down past its grace period and handed the job back: queued at once; the attempt is given back. */
  attempt_interrupted: { running: "queued" },
  /**
   * The handler slept (`sleep`) or began waiting for an event
   * (`waitForEvent`): the attempt ends `suspended` and is given back, and the
   * job holds no slot until it wakes. With a cancel requested, the job ends
   * `cancelled` instead (`cancel_observed`).
   */
  attempt_suspended: { running: "sleeping" },
  /** A sleeping job's time came (the waker), or an event it waits for was sent: it runs again, replaying its steps. */
  wake: { sleeping: "queued" },
  /** The reclaim sweep found the lease expired with attempts left: retrying at once; the attempt counts. */
  lease_expired: { running: "retrying" },
  /** The reclaim sweep found the lease expired on the last attempt: to the dead-letter queue (`attempts_exhausted`). */
  lease_expired_exhausted: { running: "dead" },
  /**
   * An attempt that did not succeed ended (any of the ends above but
   * success, the reclaim sweep's included) while a cancel was requested:
   * the job ends cancelled instead, and the attempt counts.
   */
  cancel_observed: { running: "cancelled" },
  /**
   * A cancel (the client, the API, a bulk action, a flow's cancel): a job
   * that has not started is cancelled at once; a running one keeps running
   * with its cancel requested, which its handler's signal learns at the next
   * lease renewal. A finished job has no row: the cancel is refused.
   */
  cancel: { waiting: "cancelled", queued: "cancelled", retrying: "cancelled", sleeping: "cancelled", running: "running" },
  /** Every dependency of a waiting job ended as its policy requires (dependency release): it may run now. */
  dependencies_met: { waiting: "queued" },
  /**
   * A dependency ended other than succeeded under the `fail` policy: to the
   * dead-letter queue (`dependency_failed`). A queued job moves too: one
   * inserted after its dependencies had ended is queued until they are counted.
   */
  dependency_failed: { waiting: "dead", queued: "dead" },
  /**
   * A dependency ended other than succeeded under the `cancel` policy, or a
   * batch callback's condition can no longer hold: cancelled (a queued job
   * too, as above).
   */
  dependency_cancelled: { waiting: "cancelled", queued: "cancelled" },
  /**
   * A dependency that had ended is requeued: a job that has not started,
   * or that its dependency alone had ended, waits for it again.
   */
  dependency_reopened: { queued: "waiting", dead: "waiting", cancelled: "waiting" },
  /** A dead job is requeued (deadLetters.requeue, a bulk retry): queued now with fresh attempts, same id. */
  requeue: { dead: "queued" },
  /**
   * Rerun a job from a named step (`rerunFromStep`): that step's record and
   * every later one are forgotten, and the job runs again with fresh
   * attempts. A running job is refused: its steps are being written.
   */
  rerun_from_step: { dead: "queued", sleeping: "queued", queued: "queued", retrying: "queued" },
} as const satisfies Readonly<Record<string, Readonly<Partial<Record<JobStatus, JobStatus>>>>>;

/** Something that may move a job: one of the keys of `TRANSITIONS`. */
export type JobEvent = keyof typeof TRANSITIONS;

/** Every `JobEvent`. */
export const JOB_EVENTS = Object.keys(TRANSITIONS) as readonly JobEvent[];

/** The events that end a running attempt (each applies in `running` only). */
export const ATTEMPT_END_EVENTS = [
  "attempt_succeeded",
  "attempt_retry_after",
  "attempt_failed",
  "attempts_exhausted",
  "permanent_error",
  "attempt_interrupted",
  "lease_expired",
  "lease_expired_exhausted",
  "cancel_observed",
] as const satisfies readonly JobEvent[];

/**
 * The events that a cancel requested while the attempt ran turns into
 * `cancel_observed` at the attempt's end: every end but a success. The one
 * statement of the cancel-at-end rule: withCancelRequest (outcome.ts)
 * applies it in TypeScript and cancelAtEnd (store/sql/status-writes.ts)
 * renders it into the statements that read the flag under their row lock.
 */
export const CANCEL_OBSERVED_AT = [
  "attempt_retry_after",
  "attempt_failed",
  "attempts_exhausted",
  "permanent_error",
  "attempt_interrupted",
  "attempt_suspended",
  "lease_expired",
  "lease_expired_exhausted",
] as const satisfies readonly JobEvent[];

/** Why a job goes to the dead-letter queue: its attempts ran out, a handler threw `PermanentError`, or a dependency ended other than succeeded. */
export const DEAD_REASONS = ["attempts_exhausted", "permanent_error", "dependency_failed"] as const;

/** One of `DEAD_REASONS`. */
export type DeadReason = (typeof DEAD_REASONS)[number];

/**
 * What an event writes on the job row besides its state. `finished_at` is
 * not listed: every write sets it when the job enters a terminal state and
 * clears it otherwise.
 */
export interface TransitionEffects {
  /**
   * The attempt counter: `count` adds the attempt a claim starts, `give_back`
   * takes back the one that ended (it was not a failure), `reset` starts
   * afresh at 0, `keep` leaves it (an attempt that ended counts).
   */
  attempts: "count" | "give_back" | "reset" | "keep";
  /**
   * When the job may run next: `now`; `not_before_now` (a later `run_at` of
   * its own stands); `after_delay` (the decided delay from now: a backoff, a
   * `RetryAfter`); `wake_at` (the sleep's or wait's time); `keep`.
   */
  runAt: "now" | "not_before_now" | "after_delay" | "wake_at" | "keep";
  /**
   * The attempt's hold: `take` a lease (worker, execution id, start);
   * `release` it (lease, worker and execution id cleared); `record` it (only
   * the lease ends: the execution id and worker stay on the row as the
   * record of the attempt that ended the job); `keep`.
   */
  hold: "take" | "release" | "record" | "keep";
  /** `last_error`: `given` (the error the write carries, else the job's last one), `clear`, `keep`. */
  lastError: "given" | "clear" | "keep";
  /** `result`: `given` (the handler's value), `keep`. */
  result: "given" | "keep";
  /** `cancel_requested`: `request`, `clear` (a job that runs again starts without one), `keep`. */
  cancel: "request" | "clear" | "keep";
  /**
   * The unique key: `by_state` (kept only in the states it is held in,
   * store/sql/job-moves.ts), `kept` (a claim, or a wake: the job is mid-run
   * and keeps what its run holds).
   */
  uniqueKey: "by_state" | "kept";
  /** Why the job goes to the dead-letter queue, for an event that moves it to `dead`; null otherwise. */
  deadReason: DeadReason | null;
  /** The outcome recorded for the attempt the event ends, when the event fixes it; null: the decision's. */
  outcome: ExecutionOutcome | null;
}

const effects = (overrides: Partial<TransitionEffects>): TransitionEffects =>
  Object.freeze({
    attempts: "keep",
    runAt: "keep",
    hold: "keep",
    lastError: "keep",
    result: "keep",
    cancel: "keep",
    uniqueKey: "by_state",
    deadReason: null,
    outcome: null,
    ...overrides,
  });

/** An attempt that ended other than in success: the hold goes, the attempt's error is kept. */
const ENDED = { hold: "release", lastError: "given" } as const;

/** What each event writes besides the state (TransitionEffects). */
export const EFFECTS: Readonly<Record<JobEvent, TransitionEffects>> = Object.freeze({
  claim: effects({ attempts: "count", hold: "take", uniqueKey: "kept" }),
  attempt_succeeded: effects({ hold: "record", result: "given" }),
  attempt_retry_after: effects({ ...ENDED, attempts: "give_back", runAt: "after_delay" }),
  attempt_failed: effects({ ...ENDED, runAt: "after_delay" }),
  attempts_exhausted: effects({ ...ENDED, deadReason: "attempts_exhausted" }),
  permanent_error: effects({ ...ENDED, deadReason: "permanent_error" }),
  attempt_interrupted: effects({ ...ENDED, attempts: "give_back", runAt: "after_delay" }),
  attempt_suspended: effects({ hold: "release", attempts: "give_back", runAt: "wake_at", outcome: "suspended" }),
  wake: effects({ runAt: "now", uniqueKey: "kept" }),
  lease_expired: effects({ ...ENDED, runAt: "after_delay" }),
  lease_expired_exhausted: effects({ ...ENDED, deadReason: "attempts_exhausted" }),
  cancel_observed: effects({ ...ENDED, outcome: "cancelled" }),
  cancel: effects({ cancel: "request" }),
  dependencies_met: effects({ runAt: "not_before_now", lastError: "clear" }),
  dependency_failed: effects({ lastError: "given", deadReason: "dependency_failed" }),
  dependency_cancelled: effects({ lastError: "given" }),
  dependency_reopened: effects({ lastError: "clear" }),
  requeue: effects({ attempts: "reset", runAt: "now", cancel: "clear" }),
  rerun_from_step: effects({ attempts: "reset", runAt: "now", cancel: "clear", lastError: "clear" }),
});

/** One row of the table: `event` moves a job in `from` to `to`. */
export interface Transition {
  from: JobStatus;
  event: JobEvent;
  to: JobStatus;
}

/** The state `event` moves a job in `from` to, or null when the table has no such row (the event does not move it). */
export function transitionOf(from: JobStatus, event: JobEvent): JobStatus | null {
  const row: Partial<Record<JobStatus, JobStatus>> = TRANSITIONS[event];
  return row[from] ?? null;
}

/** Every row of the table, event by event. */
export function transitionRows(): Transition[] {
  return JOB_EVENTS.flatMap((event) =>
    Object.entries(TRANSITIONS[event]).map(([from, to]) => ({ from: from as JobStatus, event, to: to as JobStatus })),
  );
}
