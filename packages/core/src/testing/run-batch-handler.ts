import pino, { type Logger } from "pino";
import type { BatchContext, BatchJob } from "../core/batch.js";
import { outcomeOf } from "../core/batch.js";
import type { AnyJobDefinition, PayloadInput } from "../core/define-job.js";
import { DEFAULT_TENANT } from "../core/defaults.js";
import { ConfigError } from "../core/errors.js";
import { uuidv7 } from "../core/ids.js";
import { encodeJson } from "../core/json.js";
import { decideOutcome, type OutcomeDecision } from "../core/outcome.js";
import type { Queryable } from "../core/queryable.js";
import { checkKnownFields, validatePayload } from "../core/validate.js";

/** Options of `runBatchHandler`; every field has a default. */
export interface RunBatchHandlerOptions {
  /** Each job's attempt number, from 1. Default 1. */
  attempt?: number;
  /** Default `"default"` (`DEFAULT_TENANT`). */
  tenant?: string;
  /** Parse each payload with the kind's schema first, as an enqueue does. Default true. */
  validate?: boolean;
  /** What the batch's `transaction(work)` runs `work` on. Default: none, and `transaction` throws a `ConfigError`. */
  tx?: Queryable;
  /** A logger for the batch's `log`. Default: silent. */
  logger?: Logger;
}

/** How one job of the batch ended, named as the worker would record it. */
export interface BatchJobResult {
  /** The job's id in the batch. */
  id: string;
  /** `succeeded`, `failed` (an error outcome, or the handler threw) or `retry_after`. */
  outcome: "succeeded" | "failed" | "retry_after";
  /** What the job would become: `succeeded`, `retrying` or `dead`. */
  nextStatus: OutcomeDecision["nextStatus"];
  /** The delay before its next attempt, when retrying. */
  delayMs: number;
  /** Its result (through JSON), when it succeeded. */
  value: unknown;
  /** Its error, when it did not. */
  error: unknown;
}

/**
 * Run a kind's batch handler once in a unit test, with no database, on one
 * batch of `payloads`, and return how each job ended, in order, decided as
 * a worker decides it (its attempts, backoff, `PermanentError`,
 * `retryAfter`). A handler that throws fails every job.
 *
 * @example
 * const results = await runBatchHandler(sendEmails, [{ to: "a@x" }, { to: "b@x" }]);
 * expect(results.map((r) => r.outcome)).toEqual(["succeeded", "succeeded"]);
 */
export async function runBatchHandler<D extends AnyJobDefinition>(
  definition: D,
  payloads: ReadonlyArray<PayloadInput<D>>,
  options: RunBatchHandlerOptions = {},
): Promise<BatchJobResult[]> {
  checkKnownFields(options, { attempt: true, tenant: true, validate: true, tx: true, logger: true }, "an option of runBatchHandler", { ErrorType: ConfigError });
  if (!definition.batch) throw new ConfigError(`job "${definition.kind}" has no batchHandler: use runHandler`);
  const attempt = options.attempt ?? 1;
  const parsed = await Promise.all(payloads.map((payload) => (options.validate === false ? payload : validatePayload(definition.schema, payload, definition.kind))));
  const jobs: Array<BatchJob<unknown>> = parsed.map((payload) => ({
    id: uuidv7(),
    payload,
    tenant: options.tenant ?? DEFAULT_TENANT,
    queue: definition.queue,
    attempt,
    maxAttempts: definition.maxAttempts,
    executionId: uuidv7(),
    signal: new AbortController().signal,
  }));
  const context: BatchContext<unknown> = {
    jobs,
    signal: new AbortController().signal,
    batchId: uuidv7(),
    workerId: "test-worker",
    log: options.logger ?? pino({ level: "silent" }),
    transaction: async (work) => {
      if (!options.tx) throw new ConfigError("the batch's transaction needs a database: pass runBatchHandler's options.tx");
      return work(options.tx);
    },
  };
  let outcomes: unknown;
  let thrown: { error: unknown } | null = null;
  try {
    outcomes = await definition.batch.handler(context);
  } catch (error) {
    thrown = { error };
  }
  return jobs.map((job, index) => {
    const inputs = { attempt, maxAttempts: definition.maxAttempts, backoff: definition.backoff };
    try {
      if (thrown) throw thrown.error;
      const value = outcomeOf(outcomes, index, jobs.length);
      const stored = value === undefined ? undefined : JSON.parse(encodeJson(value, "result"));
      const decision = decideOutcome({ kind: "returned", value }, inputs);
      return { id: job.id, outcome: "succeeded", nextStatus: decision.nextStatus, delayMs: 0, value: stored, error: undefined };
    } catch (error) {
      const decision = decideOutcome({ kind: "threw", error }, inputs);
      return { id: job.id, outcome: decision.outcome as "failed" | "retry_after", nextStatus: decision.nextStatus, delayMs: decision.delayMs, value: undefined, error };
    }
  });
}
