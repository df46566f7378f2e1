import type { Logger } from "pino";
import type { AnyJobDefinition } from "../core/define-job.js";
import { type BatchContext, type BatchJob, outcomeOf } from "../core/batch.js";
import { ConflictError } from "../core/errors.js";
import { uuidv7 } from "../core/ids.js";
import { keepsSucceeded } from "../core/retention.js";
import { encodeJson } from "../core/json.js";
import type { Queryable } from "../core/queryable.js";
import type { HandlerStore } from "../store/handler-store.js";
import { translatePgError } from "../store/pg-errors.js";
import { rollback } from "../store/transaction.js";
import { LeaseLostError, WorkerShutdownError } from "./abort-reasons.js";
import type { Attempt } from "./attempt.js";
import { executeAttempt, type ExecutorDeps } from "./executor.js";

/** What running a batch needs beyond what every attempt does. */
export interface BatchDeps extends ExecutorDeps {
  handlers: HandlerStore;
}

/**
 * Run one batch of a batch kind's claimed attempts: call the batch handler
 * once with every job that may still start, then settle each job as its
 * own attempt (executeAttempt) with its outcome in the batch, so each keeps
 * its own fence, time limit, cancel, attempts, backoff and dead letter. A
 * job whose lease's deadline passed or whose cancel came before the batch
 * started is left out of the batch and ends as a lone attempt would. Never
 * throws; resolves when every job's end is written or given up.
 */
export async function executeBatch(definition: AnyJobDefinition, attempts: readonly Attempt[], deps: BatchDeps): Promise<void> {
  const now = performance.now();
  const live: Attempt[] = [];
  const left: Attempt[] = [];
  for (const running of attempts) (running.leaseDeadline > now && !running.cancelObserved ? live : left).push(running);
  const batchId = uuidv7();
  const kind = definition.kind;
  deps.metrics.batchSize.observe({ kind }, live.length);
  const log = deps.log.child({ batchId, kind, batchSize: live.length });
  // Display only (which batch an attempt ran in): a failed write costs the dashboard its batch column.
  // Sent without waiting, unless the kind keeps no succeeded jobs: then it lands before the handler
  // runs, so that the completion that deletes a job finds its row and forgets it with the job.
  if (live.length > 0) {
    const recorded = deps.handlers.jobBatchRecord(batchId, live.map((running) => running.job.id), live.map((running) => running.executionId)).catch((error: unknown) => {
      log.warn({ err: (error as Error).message }, "could not record the batch's members");
    });
    if (!keepsSucceeded(definition.retention)) await recorded;
  }
  const context = batchContext(live, batchId, log, deps);
  const span = live.length > 0 ? deps.tracing.batchSpan(definition.queue, kind, batchId, live.map((running) => running.job)) : undefined;
  const handler = definition.batch!.handler;
  const outcomes = live.length === 0 ? Promise.resolve([]) : Promise.resolve().then(() => (span ? span.run(() => handler(context)) : handler(context)));
  outcomes.then(
    () => span?.end("succeeded", undefined),
    (error: unknown) => span?.end("failed", error),
  );
  const neverCalled = (): never => {
    throw new Error("unreachable: an attempt left out of its batch never starts");
  };
  await Promise.all([
    ...live.map((running, index) => executeAttempt(definition, running, deps, () => outcomes.then((all) => outcomeOf(all, index, live.length)))),
    ...left.map((running) => executeAttempt(definition, running, deps, neverCalled)),
  ]);
}

/** The batch handler's context: its jobs (each with its own signal), a batch-wide signal, and the batch's transaction. */
function batchContext(live: readonly Attempt[], batchId: string, log: Logger, deps: BatchDeps): BatchContext<unknown> {
  const jobs: Array<BatchJob<unknown>> = live.map((running) => ({
    id: running.job.id,
    payload: running.job.payload,
    tenant: running.job.tenant,
    queue: running.job.queue,
    attempt: running.job.attempts,
    maxAttempts: running.job.maxAttempts,
    executionId: running.executionId,
    get signal() {
      return running.signal;
    },
  }));
  let transactions = 0;
  let signal: AbortSignal | undefined;
  return {
    jobs,
    // Made when first read, as each job's own: most handlers never read it, and a signal per job of the batch to follow is not free.
    get signal() {
      return (signal ??= batchSignal(live));
    },
    batchId,
    workerId: deps.workerId,
    log,
    transaction: async (work) => {
      transactions += 1;
      if (transactions > 1) throw new ConflictError("batch transaction: a batch runs one transaction (its jobs complete once)");
      return batchTransaction(live, work, deps);
    },
  };
}

/**
 * Aborts when the worker shuts down past its grace period (each job is
 * then forced with WorkerShutdownError) or once every job of the batch has
 * aborted: nothing is left for the batch to do. Made at any time: jobs
 * already aborted count at once.
 */
function batchSignal(live: readonly Attempt[]): AbortSignal {
  const controller = new AbortController();
  let aborted = 0;
  for (const running of live) {
    const onAbort = () => {
      aborted += 1;
      const reason: unknown = running.signal.reason;
      if (reason instanceof WorkerShutdownError || aborted === live.length) controller.abort(reason);
    };
    if (running.signal.aborted) onAbort();
    else running.signal.addEventListener("abort", onAbort, { once: true });
  }
  return controller.signal;
}

/**
 * `BatchContext.transaction`: BEGIN, run `work`, complete every job whose
 * outcome is a success in the same transaction (one statement, fenced on
 * each execution id), COMMIT. When any of them is no longer ours, roll
 * back everything: the batch's writes belong to all its successes at once.
 */
async function batchTransaction<T extends ReadonlyArray<unknown>>(live: readonly Attempt[], work: (tx: Queryable) => Promise<T>, deps: BatchDeps): Promise<T> {
  const client = await deps.handlers.connect();
  let broken: Error | undefined;
  try {
    await translated(() => client.query("BEGIN"));
    try {
      const outcomes = await work(client);
      const successes: Array<{ running: Attempt; result: string | null }> = [];
      live.forEach((running, index) => {
        const outcome = outcomeOrError(outcomes, index, live.length);
        if (outcome instanceof Error) return;
        successes.push({ running, result: outcome === undefined ? null : encodeJson(outcome, "result") });
      });
      const now = performance.now();
      // A job ended from outside (lease lost, timeout, shutdown) is no longer this transaction's to complete;
      // a cancelled one still is: a success returned after a cancel stands, as for any job.
      const lost = successes.filter(({ running }) => !running.holdsLease || running.leaseDeadline <= now);
      if (lost.length > 0) throw lostIn(lost.map(({ running }) => running), "its attempt ended (lease lost, time limit or shutdown) before the commit");
      const written = new Set(
        await deps.handlers.jobCompleteManyInTransaction(
          client,
          successes.map(({ running, result }) => ({ jobId: running.job.id, executionId: running.executionId, result, keep: running.keepSucceeded })),
        ),
      );
      const fenced = successes.filter(({ running }) => !written.has(running.executionId));
      if (fenced.length > 0) throw lostIn(fenced.map(({ running }) => running), "it is no longer this worker's");
      for (const { running } of successes) running.beginCommit();
      try {
        await translated(() => client.query("COMMIT"));
      } catch (error) {
        for (const { running } of successes) running.commitFailed();
        throw error;
      }
      for (const { running } of successes) running.commitSucceeded();
      return outcomes;
    } catch (error) {
      broken = await rollback(client, error);
      throw error;
    }
  } finally {
    client.release(broken);
  }
}

/** Job `index`'s outcome: its result, or the Error it failed with (a broken outcomes array fails the transaction). */
function outcomeOrError(outcomes: unknown, index: number, size: number): unknown {
  try {
    return outcomeOf(outcomes, index, size);
  } catch (error) {
    if (Array.isArray(outcomes) && outcomes.length === size) return error;
    throw error;
  }
}

function lostIn(jobs: readonly Attempt[], why: string): LeaseLostError {
  const ids = jobs.slice(0, 5).map((running) => running.job.id).join(", ");
  return new LeaseLostError(`the batch's transaction was rolled back: job ${ids}${jobs.length > 5 ? ` and ${jobs.length - 5} more` : ""}: ${why}`);
}

async function translated<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    throw translatePgError(error);
  }
}
