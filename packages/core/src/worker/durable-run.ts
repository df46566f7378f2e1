import type { Logger } from "pino";
import { retryDelayMs } from "../core/backoff.js";
import { NO_DEADLINE } from "../core/defaults.js";
import { JobSuspendedError, StepError } from "../core/errors.js";
import type { Queryable } from "../core/queryable.js";
import {
  checkRecordName,
  checkRecordRoom,
  checkSleepTime,
  checkWaitOptions,
  type DurableFunctions,
  encodeStepResult,
  type StepOptions,
  stepCallOf,
  stepFailureIsFinal,
  type WaitForEventOptions,
} from "../core/steps.js";
import { RECORD_TRANSITIONS, recordSettled } from "../core/step-transitions.js";
import type { MetricRecorders } from "../metrics/worker-metrics.js";
import type { AttemptSpan, Tracing } from "../tracing/tracing.js";
import type { HandlerStore } from "../store/handler-store.js";
import type { LoadedStep, StepStore, Suspension } from "../store/step-store.js";
import { rollback } from "../store/transaction.js";
import { translatePgError } from "../store/pg-errors.js";
import { LeaseLostError } from "./abort-reasons.js";
import type { Attempt } from "./attempt.js";
import { toStoredError } from "./errors-to-store.js";

/** What the durable functions of every attempt of one worker share. */
export interface DurableDeps {
  steps: StepStore;
  handlers: HandlerStore;
  workerId: string;
  metrics: MetricRecorders;
  tracing: Tracing;
}


/**
 * `step`, `sleep` and `waitForEvent` for one attempt (core/steps.ts
 * DurableFunctions), built when the handler first reaches for one. The
 * job's records are read once, at the first call; each later call
 * replays a record or makes one, fenced on the attempt's execution id
 * (store/sql/steps.ts). A sleep or a wait without its event ends the
 * attempt from inside the call (`Attempt.suspendSucceeded`) and throws
 * `JobSuspendedError`, and every later call of the attempt throws it again.
 */
export class DurableRun implements DurableFunctions {
  #records: Promise<Map<string, LoadedStep>> | null = null;
  /** performance.now() when the records were read: the base of their `wakeInMs`. */
  #readAt = 0;
  /** Names used in this run: a name twice in one run is an error. */
  readonly #used = new Set<string>();
  #suspended: JobSuspendedError | null = null;

  constructor(
    private readonly running: Attempt,
    private readonly deps: DurableDeps,
    private readonly log: () => Logger,
  ) {}

  /** True when this attempt suspended the job (sleeping, or cancelled at the suspension). */
  get suspended(): boolean {
    return this.#suspended !== null;
  }

  step = async <T>(name: string, optionsOrFn: StepOptions | (() => unknown), maybeFn?: (tx: Queryable) => unknown): Promise<T> => {
    this.begin(name, "step");
    const { options, fn, retries, backoff } = stepCallOf(name, optionsOrFn, maybeFn);
    const span = this.deps.tracing.stepSpan(name, "step", this.running.job.id);
    try {
      const recorded = await this.recorded(name, "step");
      if (recorded?.kind === "step" && recordSettled("step", recorded.state)) {
        this.deps.metrics.steps.inc({ kind: "step", outcome: "replayed" });
        span?.end("replayed", undefined);
        return recorded.result as T;
      }
      const run = options.transaction
        ? (started: number) => this.transactional(name, fn, started)
        : (started: number) => this.plain(name, fn as () => unknown, started);
      for (let call = 1; ; call += 1) {
        this.running.signal.throwIfAborted();
        const started = performance.now();
        try {
          const stored = await (span ? span.run(() => run(started)) : run(started));
          this.deps.metrics.steps.inc({ kind: "step", outcome: "completed" });
          span?.end("completed", undefined);
          return stored as T;
        } catch (error) {
          const final = stepFailureIsFinal(call, retries, error) || error instanceof LeaseLostError || this.running.aborted;
          if (final) {
            if (!(error instanceof LeaseLostError) && !this.running.aborted) await this.recordFailure(name, error, started);
            throw error;
          }
          this.log().warn({ step: name, call, err: toStoredError(error) }, "step failed; calling it again");
          await abortableDelay(retryDelayMs(backoff, call), this.running.signal);
        }
      }
    } catch (error) {
      span?.end(error instanceof LeaseLostError ? "lease_lost" : "failed", error);
      throw error;
    }
  };

  sleep = async (name: string, duration: number | Date): Promise<void> => {
    this.begin(name, "sleep");
    checkSleepTime(name, duration, Date.now());
    const recorded = await this.recorded(name, "sleep");
    if (recorded?.kind === "sleep" && (recordSettled("sleep", recorded.state) || this.due(recorded))) return this.replayed(name, "sleep");
    if (!recorded && typeof duration === "number" && duration === 0) return;
    const at = duration instanceof Date ? duration : null;
    await this.traced(name, "sleep", () => this.suspend({ name, kind: "sleep", at, inMs: at ? null : (duration as number), event: null, key: null }));
  };

  waitForEvent = async <T = unknown>(name: string, options: WaitForEventOptions): Promise<T | null> => {
    this.begin(name, "wait");
    const key = checkWaitOptions(name, options);
    const { timeoutMs } = options;
    const recorded = await this.recorded(name, "wait");
    if (recorded?.kind === "wait" && recordSettled("wait", recorded.state)) {
      this.replayed(name, "wait");
      return recorded.state === RECORD_TRANSITIONS.wait.event_received.to ? (recorded.result as T) : null;
    }
    if (recorded && this.due(recorded)) {
      return this.traced(name, "wait", async () => {
        this.checkLease();
        const ended = await this.deps.steps.jobWaitTimeout(this.running.job.id, this.running.executionId, name);
        if (ended === undefined) throw this.lost("a wait's timeout found the job no longer this attempt's");
        this.deps.metrics.waits.inc({ outcome: ended === null ? "timed_out" : "received" });
        return ended === null ? null : (ended.payload as T);
      });
    }
    return this.traced(name, "wait", async () => {
      const received = await this.suspend({
        name,
        kind: "wait",
        at: timeoutMs === undefined ? NO_DEADLINE : null,
        inMs: timeoutMs ?? null,
        event: options.event,
        key,
      });
      this.deps.metrics.waits.inc({ outcome: "received" });
      return received as T;
    });
  };

  /** A sleep or wait that returned its record: a span of its own, ended at once (when tracing). */
  private replayed(name: string, kind: "sleep" | "wait"): void {
    this.deps.tracing.stepSpan(name, kind, this.running.job.id)?.end("replayed", undefined);
  }

  /** Run a sleep's or a wait's database work in its span (when tracing), ended with how it went. */
  private async traced<T>(name: string, kind: "sleep" | "wait", work: () => Promise<T>): Promise<T> {
    const span: AttemptSpan | undefined = this.deps.tracing.stepSpan(name, kind, this.running.job.id);
    try {
      const value = await work();
      span?.end(kind === "sleep" ? "completed" : value === null ? "timed_out" : "received", undefined);
      return value;
    } catch (error) {
      span?.end(error instanceof JobSuspendedError ? "suspended" : error instanceof LeaseLostError ? "lease_lost" : "failed", error);
      throw error;
    }
  }

  /** A new name in this run, and the attempt not suspended. */
  private begin(name: string, kind: LoadedStep["kind"]): void {
    if (this.#suspended) throw this.#suspended;
    checkRecordName(this.#used, name, kind);
  }

  /** The job's record of `name`, checked to be of `kind`; undefined when there is none (and room for one more). */
  private async recorded(name: string, kind: LoadedStep["kind"]): Promise<LoadedStep | undefined> {
    const records = await (this.#records ??= this.load());
    const record = records.get(name);
    if (record && record.kind !== kind) {
      throw new StepError(`${kind} ${JSON.stringify(name)}: this job recorded a ${record.kind} of that name; give the ${kind} a name of its own`);
    }
    if (!record) checkRecordRoom(records.size, name, kind);
    return record;
  }

  private async load(): Promise<Map<string, LoadedStep>> {
    const rows = await this.deps.steps.jobStepsLoad(this.running.job.id);
    this.#readAt = performance.now();
    return new Map(rows.map((row) => [row.name, row]));
  }

  /** True when a sleep's time or a wait's deadline has come (database clock, read once). */
  private due(record: LoadedStep): boolean {
    return record.wakeInMs !== null && record.wakeInMs - (performance.now() - this.#readAt) <= 0;
  }

  private async plain(name: string, fn: () => unknown, started: number): Promise<unknown> {
    const json = encodeStepResult(name, await fn());
    this.running.signal.throwIfAborted();
    this.checkLease();
    const stored = await this.deps.steps.jobStepRecord(this.record(name, json, started));
    if (!stored) throw this.lost("a step's record found the job no longer this attempt's");
    await this.remember(name, stored.result);
    return stored.result;
  }

  /** fn's writes and the step's record in one transaction, committed only while the attempt owns the job. */
  private async transactional(name: string, fn: (tx: Queryable) => unknown, started: number): Promise<unknown> {
    const client = await this.deps.handlers.connect();
    let broken: Error | undefined;
    try {
      await translated(() => client.query("BEGIN"));
      try {
        const json = encodeStepResult(name, await fn(client));
        this.running.signal.throwIfAborted();
        this.checkLease();
        const stored = await this.deps.steps.jobStepRecord(this.record(name, json, started), client);
        if (!stored) throw this.lost("the step's transaction was rolled back: the job is no longer this attempt's");
        await translated(() => client.query("COMMIT"));
        await this.remember(name, stored.result);
        return stored.result;
      } catch (error) {
        broken = await rollback(client, error);
        throw error;
      }
    } finally {
      client.release(broken);
    }
  }

  private record(name: string, json: string, started: number) {
    const { job, executionId } = this.running;
    return { jobId: job.id, executionId, name, state: RECORD_TRANSITIONS.step.returned.to, result: json, error: null, ranMs: performance.now() - started };
  }

  private async remember(name: string, result: unknown): Promise<void> {
    const records = await this.#records!;
    records.set(name, { name, kind: "step", state: RECORD_TRANSITIONS.step.returned.to, result, wakeInMs: null });
  }

  /** Keep a failed step's error for display; a write that fails or is fenced changes nothing of the outcome. */
  private async recordFailure(name: string, error: unknown, started: number): Promise<void> {
    this.deps.metrics.steps.inc({ kind: "step", outcome: "failed" });
    if (this.running.leaseDeadline <= performance.now()) return;
    const { job, executionId } = this.running;
    await this.deps.steps
      .jobStepRecord({ jobId: job.id, executionId, name, state: RECORD_TRANSITIONS.step.threw.to, result: null, error: JSON.stringify(toStoredError(error)), ranMs: performance.now() - started })
      .catch((cause: unknown) => this.log().warn({ step: name, err: (cause as Error).message }, "could not record a failed step's error"));
  }

  /**
   * End the attempt on a sleep or a wait. Resolves (with the event's
   * payload) only when a wait found its event already sent; otherwise the
   * job now sleeps (or, with a cancel requested, was cancelled) and this
   * throws JobSuspendedError.
   */
  private async suspend(s: Pick<Suspension, "name" | "kind" | "at" | "inMs" | "event" | "key">): Promise<unknown> {
    this.checkLease();
    const { job, executionId } = this.running;
    this.running.beginSuspend();
    let result;
    try {
      result = await this.deps.steps.jobSuspend({ ...s, jobId: job.id, executionId, workerId: this.deps.workerId, tenant: job.tenant });
    } catch (error) {
      this.running.suspendFailed();
      throw error;
    }
    if (result.kind === "fenced") {
      this.running.suspendFailed();
      throw this.lost(`a ${s.kind}'s suspension found the job no longer this attempt's`);
    }
    if (result.kind === "received") {
      this.running.suspendFailed();
      return result.payload;
    }
    this.running.suspendSucceeded();
    this.deps.metrics.suspensions.inc({ kind: s.kind });
    const status = result.job.status;
    const until = result.job.runAt.toISOString();
    this.#suspended = new JobSuspendedError(
      status === "cancelled"
        ? `the job was cancelled at its ${s.kind} ${JSON.stringify(s.name)}`
        : s.kind === "sleep"
          ? `the job sleeps until ${until} (sleep ${JSON.stringify(s.name)})`
          : `the job waits for event ${JSON.stringify(s.event)} (key ${JSON.stringify(s.key)}) until ${until} (waitForEvent ${JSON.stringify(s.name)})`,
    );
    this.log().debug({ step: s.name, status, runAt: until }, "attempt suspended");
    throw this.#suspended;
  }

  /** Past the lease's local deadline another worker may own the job: write nothing. */
  private checkLease(): void {
    if (this.running.leaseDeadline <= performance.now()) throw this.lost("the lease's deadline passed before a step's record");
  }

  /** The attempt lost its lease: stop the handler as a failed heartbeat would, and write nothing more. */
  private lost(detail: string): LeaseLostError {
    this.deps.metrics.fencedWrites.inc({ operation: "step" });
    const error = new LeaseLostError(`the lease was lost: ${detail}`);
    if (this.running.holdsLease) this.running.force({ kind: "lease_lost", reason: error });
    return error;
  }
}

function abortableDelay(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

async function translated<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    throw translatePgError(error);
  }
}
