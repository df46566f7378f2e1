import { JobSuspendedError, StepError } from "../core/errors.js";
import type { Queryable } from "../core/queryable.js";
import {
  checkRecordName,
  checkRecordRoom,
  checkSleepTime,
  checkWaitOptions,
  type DurableFunctions,
  encodeStepResult,
  type RecordKind,
  type StepOptions,
  stepCallOf,
  stepFailureIsFinal,
  type WaitForEventOptions,
} from "../core/steps.js";
import { RECORD_TRANSITIONS, type RecordState } from "../core/step-transitions.js";
import { toStoredError } from "../worker/errors-to-store.js";

/** An event `runHandler` may hand to a `waitForEvent` of the handler. */
export interface TestEvent {
  event: string;
  /** Default "". */
  key?: string;
  payload?: unknown;
}

/** What the handler's durable functions did in one `runHandler`, in order. */
export interface TestStepRecord {
  name: string;
  kind: RecordKind;
  /**
   * The state a worker's record would be in, or `replayed`. step:
   * `completed`, `replayed` (given in `options.steps`), or `failed` (its
   * last call threw and the attempt failed with that error, as a worker
   * records it); sleep: `awake` (it returned at once); wait: `received`,
   * `timed_out` or `awaiting` (the attempt suspended).
   */
  state: RecordState | "replayed";
  /** A step's result (as stored: through JSON), or a received event's payload. */
  result?: unknown;
  /** A failed step's error, as a worker stores it: `{ name, message, … }`. */
  error?: unknown;
  /** A sleep's duration or time. */
  duration?: number | Date;
}

/**
 * `step`, `sleep` and `waitForEvent` in memory, for runHandler, under the
 * rules a worker's run applies (core/steps.ts): names, limits, options,
 * results through JSON, retries and which failure is final. A step
 * replays `recorded[name]` when given, else runs (its retries at once,
 * without the backoff's waits) and records its result as a worker would;
 * a step whose last call throws is recorded `failed`. A sleep is recorded
 * and returns at once: the test's time is the handler's. A wait takes the
 * first matching event of `events` not taken yet; with none it returns
 * null when it has a `timeoutMs` (as after the deadline), and otherwise
 * suspends the attempt (`suspended`), as a worker would until an event came.
 */
export class MemoryDurable implements DurableFunctions {
  readonly records: TestStepRecord[] = [];
  readonly #used = new Set<string>();
  readonly #taken = new Set<TestEvent>();
  suspended: JobSuspendedError | null = null;

  constructor(
    private readonly recorded: Readonly<Record<string, unknown>>,
    private readonly events: readonly TestEvent[],
    private readonly tx: Queryable | undefined,
    /** The attempt's signal: a step is not called again once it aborted. */
    private readonly signal: () => AbortSignal,
  ) {}

  step = async <T>(name: string, optionsOrFn: StepOptions | (() => unknown), maybeFn?: (tx: Queryable) => unknown): Promise<T> => {
    this.begin(name, "step");
    const { options, fn, retries } = stepCallOf(name, optionsOrFn, maybeFn);
    if (Object.hasOwn(this.recorded, name)) {
      const result = structuredClone(this.recorded[name]);
      this.records.push({ name, kind: "step", state: "replayed", result });
      return result as T;
    }
    this.checkRoom(name, "step");
    if (options.transaction && !this.tx) throw new StepError(`step ${JSON.stringify(name)}: a transactional step needs a database: pass runHandler's options.tx`);
    for (let call = 1; ; call += 1) {
      this.signal().throwIfAborted();
      try {
        const result = JSON.parse(encodeStepResult(name, await fn(this.tx!))) as T;
        this.records.push({ name, kind: "step", state: RECORD_TRANSITIONS.step.returned.to, result });
        return result;
      } catch (error) {
        const aborted = this.signal().aborted;
        if (aborted || stepFailureIsFinal(call, retries, error)) {
          if (!aborted) this.records.push({ name, kind: "step", state: RECORD_TRANSITIONS.step.threw.to, error: toStoredError(error) });
          throw error;
        }
      }
    }
  };

  sleep = async (name: string, duration: number | Date): Promise<void> => {
    this.begin(name, "sleep");
    checkSleepTime(name, duration, Date.now());
    this.checkRoom(name, "sleep");
    // The test's time is the handler's: the sleep is over as soon as it begins.
    this.records.push({ name, kind: "sleep", state: RECORD_TRANSITIONS.sleep.woke.to, duration });
  };

  waitForEvent = async <T = unknown>(name: string, options: WaitForEventOptions): Promise<T | null> => {
    this.begin(name, "wait");
    const key = checkWaitOptions(name, options);
    this.checkRoom(name, "wait");
    const event = this.events.find((e) => !this.#taken.has(e) && e.event === options.event && (e.key ?? "") === key);
    if (event) {
      this.#taken.add(event);
      const payload = structuredClone(event.payload ?? null);
      this.records.push({ name, kind: "wait", state: RECORD_TRANSITIONS.wait.event_received.to, result: payload });
      return payload as T;
    }
    if (options.timeoutMs !== undefined) {
      this.records.push({ name, kind: "wait", state: RECORD_TRANSITIONS.wait.deadline_passed.to });
      return null;
    }
    this.records.push({ name, kind: "wait", state: RECORD_TRANSITIONS.wait.wait_opened.to });
    throw (this.suspended = new JobSuspendedError(`the job waits for event ${JSON.stringify(options.event)} (key ${JSON.stringify(key)})`));
  };

  private begin(name: string, kind: RecordKind): void {
    if (this.suspended) throw this.suspended;
    checkRecordName(this.#used, name, kind);
  }

  /** The job's records: those `recorded` gives and those this run made, each name once. */
  private checkRoom(name: string, kind: RecordKind): void {
    const names = new Set([...Object.keys(this.recorded), ...this.records.map((record) => record.name)]);
    checkRecordRoom(names.size, name, kind);
  }
}
