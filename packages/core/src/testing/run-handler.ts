import pino, { type Logger } from "pino";
import type { AnyJobDefinition, JobContext, JobInfo, PayloadInput, ResultOf } from "../core/define-job.js";
import type { DependencyOutcome, DependencySummary } from "../core/flows.js";
import { DEFAULT_TENANT } from "../core/defaults.js";
import { ConfigError } from "../core/errors.js";
import { uuidv7 } from "../core/ids.js";
import { encodeJson } from "../core/json.js";
import { withCancelRequest } from "../core/outcome.js";
import type { Queryable } from "../core/queryable.js";
import { checkKnownFields, type KnownFields, validatePayload } from "../core/validate.js";
import { JobCancelledError, JobTimeoutError, LeaseLostError, WorkerShutdownError } from "../worker/abort-reasons.js";
import { Attempt, type Settled } from "../worker/attempt.js";
import { decideAttemptEnd } from "../worker/attempt-end.js";
import { MemoryDurable, type TestEvent, type TestStepRecord } from "./memory-durable.js";

/** Options of `runHandler` and `startHandler`; every field has a default. */
export interface RunHandlerOptions {
  /** The attempt's number, from 1. Default 1. */
  attempt?: number;
  /** Default: the definition's `maxAttempts`. */
  maxAttempts?: number;
  /** Default: a fresh UUIDv7. */
  jobId?: string;
  /** Default `"default"` (`DEFAULT_TENANT`). */
  tenant?: string;
  /** Default: the definition's queue. */
  queue?: string;
  /** Parse the payload with the kind's schema first, as an enqueue does. Default true. */
  validate?: boolean;
  /**
   * What `ctx.transaction(work)` runs `work` on: any `query(text, values)`
   * client (your test database's, or a fake). Default: none, and
   * `ctx.transaction` throws a `ConfigError`.
   */
  tx?: Queryable;
  /** A logger for `ctx.log` instead of the one that records into `logs`. Default: recorded. */
  logger?: Logger;
  /**
   * What `ctx.dependencies()` returns (and `ctx.resultsOf` and
   * `ctx.dependencySummary()` are computed from): the job's dependencies
   * with how each ended. Default: none.
   */
  dependencies?: readonly DependencyOutcome[];
  /** Results of steps an earlier run recorded, by step name: `ctx.step` returns these without calling its function. Default: none. */
  steps?: Readonly<Record<string, unknown>>;
  /** Events `ctx.waitForEvent` may receive, each once, first match first. Default: none. */
  events?: readonly TestEvent[];
}

const RUN_HANDLER_OPTION_FIELDS: KnownFields<RunHandlerOptions> = {
  attempt: true,
  maxAttempts: true,
  jobId: true,
  tenant: true,
  queue: true,
  validate: true,
  tx: true,
  logger: true,
  dependencies: true,
  steps: true,
  events: true,
};

/**
 * How a handler's attempt ended, named as the worker would record it:
 * `succeeded`, `failed` (threw; `permanent` for a `PermanentError`),
 * `retry_after` (returned `retryAfter(ms)`), `cancelled` (it threw or was
 * forced after a cancel), `timeout`, `lease_lost` or `interrupted` (forced),
 * `suspended` (a `waitForEvent` without a deadline found no event in `options.events`).
 */
export type HandlerOutcome = "succeeded" | "failed" | "retry_after" | "cancelled" | "timeout" | "lease_lost" | "interrupted" | "suspended";

/** What `runHandler` observed of one attempt. */
export interface HandlerResult<R = unknown> {
  /** How the attempt ended. */
  outcome: HandlerOutcome;
  /** What the job would become next: `succeeded`, `retrying` (after a failure or a retry-after), `queued` (handed back at shutdown), `dead` or `cancelled`; null after a lost lease (nothing is written). */
  nextStatus: "succeeded" | "retrying" | "queued" | "dead" | "cancelled" | "sleeping" | null;
  /** The delay before the next attempt (retrying, queued); 0 otherwise. */
  delayMs: number;
  /** What the handler returned, when it succeeded (as stored: through JSON). */
  value: R | undefined;
  /** What it threw, or why it was forced to end; undefined on success. */
  error: unknown;
  /** Every value passed to `ctx.progress`, in order. */
  progress: unknown[];
  /** What the handler logged through `ctx.log`, one parsed pino line each (empty with `options.logger`). */
  logs: Array<Record<string, unknown>>;
  /** How many times the handler called `ctx.heartbeat()`. */
  heartbeats: number;
  /** How many `ctx.transaction` calls committed. */
  transactions: number;
  /** What `ctx.step`, `ctx.sleep` and `ctx.waitForEvent` did, in order. */
  steps: TestStepRecord[];
}

/** A handler's attempt in progress: observe it, and cancel, time out or take away its lease. */
export interface HandlerRun<R = unknown> {
  /** The handler's `ctx.signal`. */
  readonly signal: AbortSignal;
  /** Progress values so far. */
  readonly progress: readonly unknown[];
  /** Log lines so far. */
  readonly logs: ReadonlyArray<Record<string, unknown>>;
  /** Request cancellation, as `conveyor.cancel(id)` on a running job: the signal aborts with `JobCancelledError`; the handler decides when to stop. */
  cancel(): void;
  /** End the attempt now as a timeout: the signal aborts with `JobTimeoutError` and the result does not wait for the handler. */
  timeout(): void;
  /** End the attempt now as a lost lease: the signal aborts with `LeaseLostError`, heartbeats and progress answer false. */
  loseLease(): void;
  /** End the attempt now as a worker shutdown past its grace period: `interrupted`, handed back without counting. */
  shutdown(): void;
  /** Resolves when the attempt has ended, with everything observed. */
  readonly result: Promise<HandlerResult<R>>;
}

/**
 * Start a handler in a unit test, with no database: it is called with the
 * (validated) payload and a context whose signal, job info, logger,
 * heartbeat, progress and transaction are all observable. Use the returned
 * run to simulate a cancel, a timeout, a lost lease or a shutdown while the
 * handler runs; `await run.result` for how it ended. The definition's
 * `timeoutMs` applies, as in a worker.
 *
 * @example
 * const run = startHandler(resize, { url });
 * run.cancel();
 * expect((await run.result).outcome).toBe("cancelled");
 */
export function startHandler<D extends AnyJobDefinition>(definition: D, payload: PayloadInput<D>, options: RunHandlerOptions = {}): HandlerRun<unknown> {
  checkKnownFields(options, RUN_HANDLER_OPTION_FIELDS, "an option of runHandler", { ErrorType: ConfigError });
  const attemptNumber = options.attempt ?? 1;
  const maxAttempts = options.maxAttempts ?? definition.maxAttempts;
  const job = {
    id: options.jobId ?? uuidv7(),
    tenant: options.tenant ?? DEFAULT_TENANT,
    kind: definition.kind,
    queue: options.queue ?? definition.queue,
    payload: undefined as unknown,
    attempts: attemptNumber,
    maxAttempts,
    executionId: uuidv7(),
    idempotencyKey: null,
    waitedMs: 0,
  };
  const attempt = new Attempt(job, performance.now(), Number.MAX_SAFE_INTEGER);
  const progress: unknown[] = [];
  const logs: Array<Record<string, unknown>> = [];
  const counts = { heartbeats: 0, transactions: 0 };
  let leaseLost = false;
  const logger = options.logger ?? recordingLogger(logs);
  const info: JobInfo = {
    id: job.id,
    kind: job.kind,
    tenant: job.tenant,
    queue: job.queue,
    attempt: attemptNumber,
    maxAttempts,
    executionId: job.executionId,
    workerId: "test-worker",
    cronTick: null,
  };
  const loseLease = () => {
    leaseLost = true;
    attempt.force({ kind: "lease_lost", reason: new LeaseLostError("the lease was lost (simulated by the test)") });
  };
  const durable = new MemoryDurable(options.steps ?? {}, options.events ?? [], options.tx, () => attempt.signal);
  const run = async (): Promise<HandlerResult> => {
    const parsed = options.validate === false ? payload : await validatePayload(definition.schema, payload, definition.kind);
    const context: JobContext<unknown> = {
      payload: parsed,
      get signal() {
        return attempt.signal;
      },
      job: info,
      log: logger.child({ jobId: job.id, kind: job.kind, attempt: attemptNumber, executionId: job.executionId }),
      heartbeat: async () => {
        counts.heartbeats += 1;
        return !leaseLost;
      },
      progress: async (value: unknown) => {
        encodeJson(value, "progress"); // a value that is not JSON throws at once, as in a worker
        if (leaseLost || !attempt.holdsLease) return false;
        progress.push(structuredClone(value));
        return true;
      },
      dependencies: async () => structuredClone([...(options.dependencies ?? [])]),
      resultsOf: async <D extends AnyJobDefinition>(dependency: D) =>
        (options.dependencies ?? [])
          .filter((d) => d.kind === dependency.kind && d.status === "succeeded")
          .map((d) => structuredClone(d.result) as ResultOf<D>),
      dependencySummary: async () => summarize(options.dependencies ?? []),
      transaction: async <T>(work: (tx: Queryable) => Promise<T>): Promise<T> => {
        if (!options.tx) throw new ConfigError("ctx.transaction needs a database: pass runHandler's options.tx");
        if (leaseLost) throw new LeaseLostError("the lease was lost: the transaction would be rolled back");
        const value = await work(options.tx);
        counts.transactions += 1;
        return value;
      },
      step: durable.step as JobContext<unknown>["step"],
      sleep: durable.sleep,
      waitForEvent: durable.waitForEvent,
    };
    const timer = definition.timeoutMs > 0 ? setTimeout(() => forceTimeout(attempt, definition.timeoutMs), definition.timeoutMs) : undefined;
    timer?.unref();
    const settled = await attempt.run(definition.handler, context);
    clearTimeout(timer);
    attempt.startWriting();
    attempt.finish();
    const observed = { progress, logs, ...counts, steps: durable.records };
    if (durable.suspended && !(settled.kind === "forced" && settled.end.kind === "lease_lost")) {
      return { outcome: "suspended", nextStatus: "sleeping", delayMs: 0, value: undefined, error: durable.suspended, ...observed };
    }
    return resultOf(settled, definition, attemptNumber, maxAttempts, attempt.cancelObserved, observed);
  };
  return {
    get signal() {
      return attempt.signal;
    },
    progress,
    logs,
    cancel: () => void attempt.observeCancel(new JobCancelledError()),
    timeout: () => forceTimeout(attempt, definition.timeoutMs),
    loseLease,
    shutdown: () => attempt.force({ kind: "shutdown", reason: new WorkerShutdownError() }),
    result: run() as Promise<HandlerResult<unknown>>,
  };
}

/**
 * Run a handler once in a unit test, with no database, and return how it
 * ended (see `startHandler` to cancel or time it out while it runs).
 *
 * @example
 * const { outcome, value, progress } = await runHandler(summarize, { text: "…" });
 */
export async function runHandler<D extends AnyJobDefinition>(
  definition: D,
  payload: PayloadInput<D>,
  options: RunHandlerOptions = {},
): Promise<HandlerResult<unknown>> {
  return startHandler(definition, payload, options).result;
}

function forceTimeout(attempt: Attempt, timeoutMs: number): void {
  attempt.force({ kind: "timeout", reason: new JobTimeoutError(timeoutMs) });
}

/** The attempt's end as the worker decides it (decideAttemptEnd), with a requested cancel applied as the store applies it. */
function resultOf(
  settled: Settled,
  definition: AnyJobDefinition,
  attempt: number,
  maxAttempts: number,
  cancelled: boolean,
  observed: Pick<HandlerResult, "progress" | "logs" | "heartbeats" | "transactions" | "steps">,
): HandlerResult {
  const { decision, result, error } = decideAttemptEnd(settled, { attempt, maxAttempts, backoff: definition.backoff });
  // The value through JSON, as stored; a returned RetryAfter is neither a value nor something thrown.
  const value = decision.outcome === "succeeded" && result !== null ? JSON.parse(result) : undefined;
  const final = withCancelRequest(decision, cancelled);
  return {
    outcome: final.outcome as HandlerOutcome,
    nextStatus: final.nextStatus,
    delayMs: final.delayMs,
    value,
    error: settled.kind === "returned" && decision.outcome === "retry_after" ? undefined : error,
    ...observed,
  };
}

/** A pino logger at level "trace" whose lines are parsed into `into` as they are written (synchronously). */
function recordingLogger(into: Array<Record<string, unknown>>): Logger {
  const destination = { write: (line: string) => void into.push(JSON.parse(line) as Record<string, unknown>) };
  return pino({ level: "trace", base: null, timestamp: false }, destination);
}

/** Counts of dependencies by how they ended, as the store's jobDependencySummary computes them. */
function summarize(dependencies: readonly DependencyOutcome[]): DependencySummary {
  const failed = dependencies.filter((d) => d.status === "dead" || d.status === "cancelled");
  return {
    total: dependencies.length,
    succeeded: dependencies.filter((d) => d.status === "succeeded").length,
    dead: dependencies.filter((d) => d.status === "dead").length,
    cancelled: dependencies.filter((d) => d.status === "cancelled").length,
    unfinished: dependencies.filter((d) => !["succeeded", "dead", "cancelled"].includes(d.status)).length,
    failedJobIds: failed.map((d) => d.jobId).sort(),
  };
}
