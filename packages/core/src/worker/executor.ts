import type { Logger } from "pino";
import type { AnyJobDefinition } from "../core/define-job.js";
import type { OutcomeDecision, OutcomeInputs } from "../core/outcome.js";
import type { MetricRecorders } from "../metrics/worker-metrics.js";
import type { AttemptEnd } from "../store/job-store.js";
import { JobTimeoutError, LeaseLostError } from "./abort-reasons.js";
import { AttemptContext, type ContextDeps } from "./attempt-context.js";
import { decideAttemptEnd, recordedError } from "./attempt-end.js";
import type { AttemptWriter, WriteResult } from "./attempt-writer.js";
import { toStoredError } from "./errors-to-store.js";
import type { Attempt, Settled } from "./attempt.js";
import type { Tracing } from "../tracing/tracing.js";

/** What the executor needs of its worker: one object per worker, shared by every attempt. */
export interface ExecutorDeps extends ContextDeps {
  writer: AttemptWriter;
  metrics: MetricRecorders;
  tracing: Tracing;
}

/** Where an attempt's log lines go: its context's logger, made when first used. */
type AttemptLog = { readonly log: Logger };

/**
 * Run one claimed attempt to its end: call the handler with its context,
 * enforce the time limit, and record the outcome. Never throws; whatever
 * the handler does (throw a non-Error, never settle, reject later) ends as
 * a recorded outcome or, when the lease was lost, as no write at all.
 * `handler`: what settles the attempt, the kind's handler unless given (a
 * batch's job settles with its outcome in the batch, worker/batch-run.ts).
 */
export async function executeAttempt(
  definition: AnyJobDefinition,
  running: Attempt,
  deps: ExecutorDeps,
  handler: (context: AttemptContext) => unknown = definition.handler as (context: AttemptContext) => unknown,
  ended?: (running: Attempt) => void,
): Promise<void> {
  try {
    const context = new AttemptContext(running, deps);
    const started = performance.now();
    // Past the lease's local deadline another worker may own the job: the handler never starts.
    if (running.leaseDeadline <= started) running.force({ kind: "lease_lost", reason: new LeaseLostError("the lease expired before the handler started") });
    const timer =
      definition.timeoutMs > 0
        ? setTimeout(() => running.force({ kind: "timeout", reason: new JobTimeoutError(definition.timeoutMs) }), definition.timeoutMs)
        : undefined;
    // Undefined (and nothing allocated) unless a tracer provider is registered.
    const span = deps.tracing.attemptSpan(running.job, deps.workerId, running.job.dependencyTraceContexts);
    // A cancel notified before the handler started (between the claim's commit and its answer): the
    // handler never starts, and the attempt ends as a handler rejecting with its signal's reason would.
    const cancelledFirst = running.cancelObserved && running.phase === "claimed";
    const settled: Settled = cancelledFirst
      ? { kind: "threw", error: running.signal.reason }
      : await (span ? span.run(() => running.run(handler, context)) : running.run(handler, context));
    clearTimeout(timer);
    running.startWriting();
    let outcome = "error"; // the label when recording the outcome itself failed
    try {
      const tools = context.usedTools;
      if (tools) await tools.finish(settled.kind === "forced" && settled.end.kind === "lease_lost");
      // A ctx.transaction that committed already completed the job: write nothing more.
      if (running.committed) outcome = reportCommitted(settled, context.log);
      else if (running.suspended) outcome = "suspended";
      else {
        const recorded = record(definition, running, settled, deps, context);
        outcome = typeof recorded === "string" ? recorded : report(await recorded.written, recorded.outcome, deps, context);
      }
    } finally {
      running.finish();
      span?.end(outcome, settled.kind === "returned" ? undefined : recordedError(settled));
    }
    const seconds = (performance.now() - started) / 1000;
    const kind = running.job.kind;
    deps.metrics.completed.inc({ kind, outcome });
    deps.metrics.duration.observe({ kind, outcome }, seconds);
  } finally {
    ended?.(running);
  }
}

/** An outcome on its way to the database: `report` turns the write's answer into the metrics label. */
interface PendingWrite {
  readonly written: Promise<WriteResult>;
  /** The label when the write lands. */
  readonly outcome: string;
}

/**
 * Decide the attempt's outcome (decideAttemptEnd, the path runHandler
 * reports through too) and queue its write; returns the outcome label
 * when nothing is written (the lease was lost), else the write. Not
 * async: the one await, for the write, is the caller's.
 */
function record(definition: AnyJobDefinition, running: Attempt, settled: Settled, deps: ExecutorDeps, attempt: AttemptLog): string | PendingWrite {
  const inputs: OutcomeInputs = { attempt: running.job.attempts, maxAttempts: running.job.maxAttempts, backoff: definition.backoff };
  const { decision, result, error } = decideAttemptEnd(settled, inputs);
  if (decision.nextStatus === null) {
    deps.metrics.fencedWrites.inc({ operation: "run" });
    attempt.log.warn({ reason: settled.kind === "forced" ? settled.end.reason.message : undefined }, "lease lost while running; this attempt writes nothing");
    return "lease_lost";
  }
  if (decision.nextStatus === "succeeded") {
    return { written: deps.writer.complete(running.job.id, running.executionId, result, running.keepSucceeded, running.leaseDeadline), outcome: "succeeded" };
  }
  if (settled.kind === "threw" && decision.outcome === "failed" && decision.deadReason !== "permanent_error") {
    attempt.log.warn({ err: toStoredError(settled.error) }, "attempt failed");
  }
  return endAttempt(deps, running, decision, error);
}

/** Queue the write of an attempt's end other than success. */
function endAttempt(deps: ExecutorDeps, running: Attempt, decision: OutcomeDecision, error: unknown): PendingWrite {
  // record() took the ends that write nothing (lease lost) or a success; lease_expired is the reclaim sweep's alone.
  const outcome = decision.outcome as AttemptEnd["outcome"];
  const event = decision.event as AttemptEnd["event"];
  const written = deps.writer.end(
    { jobId: running.job.id, executionId: running.executionId, outcome, error: JSON.stringify(toStoredError(error)), event, delayMs: decision.delayMs },
    running.leaseDeadline,
  );
  return { written, outcome };
}

function report(written: WriteResult, outcome: string, deps: ExecutorDeps, attempt: AttemptLog): string {
  if (!written.written) {
    attempt.log.warn({ outcome }, "outcome not recorded: the job is no longer ours (fenced)");
    return "lease_lost";
  }
  const status = written.job?.status;
  if (status === "dead") {
    deps.metrics.deadLettered.inc({ kind: written.job!.kind });
    attempt.log.error({ err: written.job!.lastError }, "job moved to the dead-letter queue");
  }
  if (status === "cancelled") return "cancelled";
  return outcome;
}

/**
 * The end of an attempt whose `ctx.transaction` committed: the job is
 * already succeeded, with the transaction's result, in the database. What
 * the handler did afterwards cannot undo that, so it is logged, never
 * recorded (a failure written now would contradict committed side effects).
 * Returns the outcome label for metrics.
 */
function reportCommitted(settled: Settled, log: Logger): "succeeded" {
  if (settled.kind === "threw") {
    log.warn({ err: toStoredError(settled.error) }, "handler threw after its transaction committed; the job stays succeeded");
  } else if (settled.kind === "forced") {
    log.warn({ reason: settled.end.reason.message }, `attempt ended (${settled.end.kind}) after its transaction committed; the job stays succeeded`);
  } else if (settled.value !== undefined) {
    log.debug("handler returned a value after its transaction committed; the transaction's result is the one kept");
  }
  return "succeeded";
}
