import { type BackoffPolicy, type ResolvedBackoff, resolveBackoff } from "./backoff.js";
import { DEFAULT_STEP_RETRIES, MAX_DELAY_MS, MAX_STEP_NAME_LENGTH, MAX_STEP_RESULT_BYTES, MAX_STEPS_PER_JOB, MIN_RUN_AT_MS } from "./defaults.js";
import { PermanentError, StepError } from "./errors.js";
import { jsonProblem } from "./json.js";
import type { Queryable } from "./queryable.js";
import { RECORD_STATES, type RecordKind, type RecordState } from "./step-transitions.js";
import { checkKnownFields, checkLabel, type KnownFields, quoted } from "./validate.js";

/** How a step runs (`step(name, options, fn)`). */
export interface StepOptions {
  /**
   * Call the function again this many times when it throws (not for a
   * `PermanentError`, nor once the attempt's signal aborted) before its
   * error fails the attempt.
   * @defaultValue `DEFAULT_STEP_RETRIES` (0)
   */
  retries?: number;
  /** Waits between those calls; the job's own backoff defaults (`DEFAULT_BACKOFF_*`) when not given. */
  backoff?: BackoffPolicy;
  /**
   * Run the function in a database transaction on Conveyor's pool and
   * commit its writes together with the step's record, fenced on the
   * attempt's execution id: they are committed exactly once. Default false.
   */
  transaction?: boolean;
}

/** A step whose function takes the step's transaction. */
export interface TransactionalStepOptions extends StepOptions {
  transaction: true;
}

/** `waitForEvent(name, options)`: which event to wait for, and for how long. */
export interface WaitForEventOptions {
  /** The event's name, as `sendEvent` sends it. */
  event: string;
  /** The key that must match the sent event's, e.g. an account id. Default "": events sent without a key. */
  key?: string;
  /**
   * Give up after this many ms: the wait then returns null. Counted from
   * the first time the job reached the wait. Default: no deadline.
   */
  timeoutMs?: number;
}

/** Every field of `StepOptions`, for the unknown-field rule (the worker's and runHandler's steps). */
export const STEP_OPTION_FIELDS: KnownFields<StepOptions> = { retries: true, backoff: true, transaction: true };
/** Every field of `WaitForEventOptions`. */
export const WAIT_FOR_EVENT_FIELDS: KnownFields<WaitForEventOptions> = { event: true, key: true, timeoutMs: true };

/** The durable-execution functions of a handler's context. */
export interface DurableFunctions {
  /**
   * Run `fn` once per job and record its JSON result: every later run of
   * the same job (a retry, a wake-up after a sleep or an event) returns the
   * recorded result without calling `fn`. The record is fenced on the
   * attempt's execution id: an attempt that lost its lease records nothing
   * and its handler aborts. `fn` runs at least once; its recorded result is
   * used exactly once-for-all. Names are unique within a job.
   */
  step<T>(name: string, fn: () => Promise<T> | T): Promise<T>;
  step<T>(name: string, options: TransactionalStepOptions, fn: (tx: Queryable) => Promise<T>): Promise<T>;
  step<T>(name: string, options: StepOptions, fn: () => Promise<T> | T): Promise<T>;
  /**
   * Sleep `duration` ms, or until a Date, without holding a slot: the
   * attempt ends (`suspended`, not counted), the job waits as `sleeping`,
   * and it runs again from the top when the time comes, replaying its
   * recorded steps; this call then returns. Never resolves in the attempt
   * that suspends (it throws `JobSuspendedError`). Either form reaches at
   * most `MAX_DELAY_MS` (10 years) ahead; further is a `StepError`.
   */
  sleep(name: string, duration: number | Date): Promise<void>;
  /**
   * Wait for an event sent with `sendEvent` (its name and key, in this
   * job's tenant) and return its payload, or null once `timeoutMs` has
   * passed. The wait takes the first matching event sent since the job was
   * enqueued that the job has not received yet, so an event sent before
   * the job reached the wait is not lost. Suspends the job as `sleep` does
   * while no event is there.
   */
  waitForEvent<T = unknown>(name: string, options: WaitForEventOptions): Promise<T | null>;
}

/** The states of a step, sleep or wait record (`StepRecord.state`), every kind's (core/step-transitions.ts). */
export const STEP_STATES = [...new Set(Object.values(RECORD_STATES).flat())] as [RecordState, ...RecordState[]];
/** One of `STEP_STATES`. */
export type StepState = RecordState;

/** A record of a job's step, sleep or wait, as the API and the dashboard show it. */
export interface StepRecord {
  /** The name the handler gave it. */
  name: string;
  /** 1 for the job's first record, then 2, …: the order in which they were first made. */
  seq: number;
  kind: RecordKind;
  /**
   * step: `completed` or `failed` (its last error, replaced by a later run's record);
   * sleep: `asleep` or `awake`; wait: `awaiting`, `received` or `timed_out`.
   * No record state is a job state: the job of an `asleep` sleep or an
   * `awaiting` wait is `sleeping`.
   */
  state: StepState;
  /** A completed step's result, or a received event's payload. */
  result: unknown;
  /** A failed step's error. */
  error: unknown;
  /** The attempt that made the record. */
  attempt: number;
  executionId: string;
  startedAt: Date;
  finishedAt: Date | null;
  /** A sleep's wake time, or a wait's deadline (null: none). */
  wakeAt: Date | null;
  /** A wait's event name, key and the id of the event it received. */
  event: string | null;
  eventKey: string | null;
  eventId: string | null;
}

/** `sendEvent`'s input. */
export interface SendEventInput {
  /** The event's name. */
  event: string;
  /** Matches waits with the same key. Default "": waits without a key. */
  key?: string;
  /** Any JSON value, handed to each wait it wakes. */
  payload?: unknown;
  /**
   * The tenant whose waits it may wake.
   * @defaultValue `DEFAULT_TENANT` ("default")
   */
  tenant?: string;
}

/** What `sendEvent` did. */
export interface SentEvent {
  /** The stored event's id. */
  id: string;
  /** The jobs it woke: each had a wait that received it. */
  jobIds: string[];
}

/**
 * Refuse a sleep's time past the one bound both forms share: `duration` ms
 * from 0 to MAX_DELAY_MS, or a Date from MIN_RUN_AT_MS to at most
 * MAX_DELAY_MS after `nowMs`. A `StepError` (permanent) naming the sleep.
 */
export function checkSleepTime(name: string, duration: unknown, nowMs: number): asserts duration is number | Date {
  const label = `sleep ${JSON.stringify(name)}`;
  if (duration instanceof Date) {
    const ms = duration.getTime();
    if (Number.isNaN(ms)) throw new StepError(`${label}: its time must be a valid Date`);
    if (ms < MIN_RUN_AT_MS || ms - nowMs > MAX_DELAY_MS) {
      throw new StepError(
        `${label}: its time must be from ${new Date(MIN_RUN_AT_MS).toISOString()} to at most ${MAX_DELAY_MS} ms (10 years) ahead, got ${duration.toISOString()}`,
      );
    }
  } else if (typeof duration !== "number" || !Number.isFinite(duration) || duration < 0 || duration > MAX_DELAY_MS) {
    throw new StepError(`${label}: duration must be a number of ms from 0 to ${MAX_DELAY_MS} (10 years), or a Date at most that far ahead, got ${String(duration)}`);
  }
}

/**
 * A step's result as it is stored: its JSON text, `undefined` stored as
 * null. A value JSON cannot carry as it is, or more than
 * MAX_STEP_RESULT_BYTES of it, is a `StepError` (permanent: every run would
 * return the same value) naming the step and where the value goes wrong,
 * e.g. `step "upgrade" returned a value that is not JSON: a function at
 * result._types.getTypeParser` for a pg query result returned as it is.
 */
export function encodeStepResult(name: string, value: unknown): string {
  if (value === undefined) return "null";
  const problem = jsonProblem(value, "result");
  if (problem) throw new StepError(`step ${JSON.stringify(name)} returned a value that is not JSON: ${problem.found} at ${problem.path}`);
  const json = JSON.stringify(value);
  const bytes = Buffer.byteLength(json);
  if (bytes > MAX_STEP_RESULT_BYTES) {
    throw new StepError(`step ${JSON.stringify(name)}: its result is ${bytes} bytes of JSON, more than MAX_STEP_RESULT_BYTES (${MAX_STEP_RESULT_BYTES})`);
  }
  return json;
}

// The rules of a durable call that hold wherever it runs: in a worker
// (worker/durable-run.ts) and in runHandler's memory (testing/memory-durable.ts),
// so that a test sees the errors and outcomes a worker would.

/** The kind of record a durable call makes. */
export type { RecordKind } from "./step-transitions.js";

/**
 * A new name in this run of the job (`used` holds the names so far, and
 * takes this one): a valid label, not used before in the run. A
 * `StepError` otherwise.
 */
export function checkRecordName(used: Set<string>, name: string, kind: RecordKind): void {
  checkLabel(name, `${kind} name`, MAX_STEP_NAME_LENGTH, StepError);
  if (used.has(name)) {
    throw new StepError(`${kind} ${JSON.stringify(name)}: this name was already used in this run of the job; step, sleep and wait names are unique within a job`);
  }
  used.add(name);
}

/** A job that has `count` records may make one more; a `StepError` past MAX_STEPS_PER_JOB. */
export function checkRecordRoom(count: number, name: string, kind: RecordKind): void {
  if (count >= MAX_STEPS_PER_JOB) {
    throw new StepError(`${kind} ${JSON.stringify(name)}: the job already has ${count} records, the most one job may have (MAX_STEPS_PER_JOB)`);
  }
}

/** A step call's arguments, checked (`stepCallOf`). */
export interface StepCall {
  options: StepOptions;
  /** The step's function; a transactional step's takes its transaction. */
  fn: (tx: Queryable) => unknown;
  /** `options.retries`, default `DEFAULT_STEP_RETRIES`. */
  retries: number;
  backoff: ResolvedBackoff;
}

/** `step(name, fn)` or `step(name, options, fn)`, read and checked: a `StepError` for a missing function or bad retries. */
export function stepCallOf(name: string, optionsOrFn: StepOptions | (() => unknown), maybeFn?: (tx: Queryable) => unknown): StepCall {
  const [options, fn] = typeof optionsOrFn === "function" ? [{} as StepOptions, optionsOrFn] : [optionsOrFn ?? {}, maybeFn];
  if (typeof fn !== "function") throw new StepError(`step ${JSON.stringify(name)}: its function is missing (step(name, fn) or step(name, options, fn))`);
  checkKnownFields(options, STEP_OPTION_FIELDS, "a step option", { path: `step ${JSON.stringify(name)}:`, ErrorType: StepError });
  const retries = options.retries ?? DEFAULT_STEP_RETRIES;
  if (!Number.isInteger(retries) || retries < 0 || retries > 100) {
    throw new StepError(`step ${JSON.stringify(name)}: retries must be an integer from 0 to 100, got ${quoted(retries)}`);
  }
  const backoff = resolveBackoff(options.backoff, `step ${JSON.stringify(name)} backoff`);
  return { options, fn: fn as (tx: Queryable) => unknown, retries, backoff };
}

/** True when a step's `call`-th call (from 1) threw its last: its retries are spent, or the error is permanent. */
export function stepFailureIsFinal(call: number, retries: number, error: unknown): boolean {
  return call > retries || error instanceof PermanentError;
}

/** `waitForEvent(name, options)`'s options, checked: a `StepError` naming the field. Returns the key (default ""). */
export function checkWaitOptions(name: string, options: WaitForEventOptions): string {
  const label = `waitForEvent ${JSON.stringify(name)}`;
  checkKnownFields(options, WAIT_FOR_EVENT_FIELDS, "a waitForEvent option", { path: `${label}:`, ErrorType: StepError });
  checkLabel(options?.event, `${label}: event`, MAX_STEP_NAME_LENGTH, StepError);
  const key = options.key ?? "";
  checkLabel(key, `${label}: key`, MAX_STEP_NAME_LENGTH, StepError, true);
  const { timeoutMs } = options;
  if (timeoutMs !== undefined && (typeof timeoutMs !== "number" || !Number.isFinite(timeoutMs) || timeoutMs < 0 || timeoutMs > MAX_DELAY_MS)) {
    throw new StepError(`${label}: timeoutMs must be a number from 0 to ${MAX_DELAY_MS}, got ${quoted(timeoutMs)}`);
  }
  return key;
}
