import { JobSuspendedError, StepError } from "../core/errors.js";
import { encodeJson } from "../core/json.js";
import type { Queryable } from "../core/queryable.js";
import type { DurableFunctions, StepOptions, WaitForEventOptions } from "../core/steps.js";

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
  kind: "step" | "sleep" | "wait";
  /** step: `completed` or `replayed`; sleep: `slept`; wait: `received`, `timed_out` or `waiting` (the attempt suspended). */
  state: "completed" | "replayed" | "slept" | "received" | "timed_out" | "waiting";
  /** A step's result (as stored: through JSON), or a received event's payload. */
  result?: unknown;
  /** A sleep's duration or time. */
  duration?: number | Date;
}

/**
 * `step`, `sleep` and `waitForEvent` in memory, for runHandler. A step
 * replays `recorded[name]` when given, else runs (its retries included)
 * and records its result through JSON, as a worker would. A sleep is
 * recorded and returns at once: the test's time is the handler's. A wait
 * takes the first matching event of `events` not taken yet; with none it
 * returns null when it has a `timeoutMs` (as after the deadline), and
 * otherwise suspends the attempt (`suspended`), as a worker would until an
 * event came.
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
  ) {}

  step = async <T>(name: string, optionsOrFn: StepOptions | (() => unknown), maybeFn?: (tx: Queryable) => unknown): Promise<T> => {
    const [options, fn] = typeof optionsOrFn === "function" ? [{} as StepOptions, optionsOrFn] : [optionsOrFn, maybeFn];
    this.begin(name, "step");
    if (Object.hasOwn(this.recorded, name)) {
      const result = structuredClone(this.recorded[name]);
      this.records.push({ name, kind: "step", state: "replayed", result });
      return result as T;
    }
    if (options.transaction && !this.tx) throw new StepError(`step ${JSON.stringify(name)}: a transactional step needs a database: pass runHandler's options.tx`);
    const retries = options.retries ?? 0;
    for (let call = 1; ; call += 1) {
      try {
        const value = await (options.transaction ? (fn as (tx: Queryable) => unknown)(this.tx!) : (fn as () => unknown)());
        const result = JSON.parse(value === undefined ? "null" : encodeJson(value, `step ${JSON.stringify(name)} result`)) as T;
        this.records.push({ name, kind: "step", state: "completed", result });
        return result;
      } catch (error) {
        if (call > retries) throw error;
      }
    }
  };

  sleep = async (name: string, duration: number | Date): Promise<void> => {
    this.begin(name, "sleep");
    this.records.push({ name, kind: "sleep", state: "slept", duration });
  };

  waitForEvent = async <T = unknown>(name: string, options: WaitForEventOptions): Promise<T | null> => {
    this.begin(name, "wait");
    const key = options.key ?? "";
    const event = this.events.find((e) => !this.#taken.has(e) && e.event === options.event && (e.key ?? "") === key);
    if (event) {
      this.#taken.add(event);
      const payload = structuredClone(event.payload ?? null);
      this.records.push({ name, kind: "wait", state: "received", result: payload });
      return payload as T;
    }
    if (options.timeoutMs !== undefined) {
      this.records.push({ name, kind: "wait", state: "timed_out" });
      return null;
    }
    this.records.push({ name, kind: "wait", state: "waiting" });
    throw (this.suspended = new JobSuspendedError(`the job waits for event ${JSON.stringify(options.event)} (key ${JSON.stringify(key)})`));
  };

  private begin(name: string, kind: TestStepRecord["kind"]): void {
    if (this.suspended) throw this.suspended;
    if (this.#used.has(name)) throw new StepError(`${kind} ${JSON.stringify(name)}: this name was already used in this run of the job; step, sleep and wait names are unique within a job`);
    this.#used.add(name);
  }
}
