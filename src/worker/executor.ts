import type { Logger } from "pino";
import type { AnyJobDefinition } from "../core/define-job.js";
import { retryDelayMs } from "../core/backoff.js";
import { PermanentError, RetryAfter } from "../core/errors.js";
import { encodeJson } from "../core/json.js";
import type { WorkerMetrics } from "../metrics/worker-metrics.js";
import { JobTimeoutError } from "./abort-reasons.js";
import { AttemptContext, type ContextDeps } from "./attempt-context.js";
import type { AttemptWriter, WriteResult } from "./attempt-writer.js";
import { reportCommitted } from "./committed-outcome.js";
import { toStoredError } from "./errors-to-store.js";
import type { RunningJob, Settled } from "./running-job.js";

/** What the executor needs of its worker: one object per worker, shared by every attempt. */
export interface ExecutorDeps extends ContextDeps {
  writer: AttemptWriter;
  metrics: WorkerMetrics;
}

/** Where an attempt's log lines go: its context's logger, made when first used. */
type AttemptLog = { readonly log: Logger };

/**
 * Run one claimed attempt to its end: call the handler with its context,
 * enforce the time limit, and record the outcome. Never throws; whatever
 * the handler does (throw a non-Error, never settle, reject later) ends as
 * a recorded outcome or, when the lease was lost, as no write at all.
 */
export async function executeAttempt(definition: AnyJobDefinition, running: RunningJob, deps: ExecutorDeps): Promise<void> {
  const context = new AttemptContext(running, deps);
  const started = performance.now();
  const timer =
    definition.timeoutMs > 0
      ? setTimeout(() => running.force({ kind: "timeout", reason: new JobTimeoutError(definition.timeoutMs) }), definition.timeoutMs)
      : undefined;
  const settled = await running.run(definition.handler, context);
  clearTimeout(timer);
  running.phase = "writing";
  const tools = context.usedTools;
  if (tools) await tools.finish(settled.kind === "forced" && settled.end.kind === "lease_lost");
  const seconds = (performance.now() - started) / 1000;
  // A ctx.transaction that committed already completed the job: write nothing more.
  const outcome = tools?.completed ? reportCommitted(settled, context.log) : await record(definition, running, settled, deps, context);
  const kind = running.job.kind;
  deps.metrics.completed.inc({ kind, outcome });
  deps.metrics.duration.observe({ kind, outcome }, seconds);
}

/** Write the attempt's outcome; returns the outcome label for metrics. */
async function record(definition: AnyJobDefinition, running: RunningJob, settled: Settled, deps: ExecutorDeps, attempt: AttemptLog): Promise<string> {
  if (settled.kind === "returned") {
    const { value } = settled;
    if (value instanceof RetryAfter) return report(await endAttempt(deps, running, "retry_after", value, value.delayMs), "retry_after", deps, attempt);
    let result: string | null;
    try {
      result = value === undefined ? null : encodeJson(value, "result");
    } catch (error) {
      return report(await endAttempt(deps, running, "failed", error, backoff(definition, running)), "failed", deps, attempt);
    }
    const written = await deps.writer.complete({ jobId: running.job.id, executionId: running.executionId, result }, running.leaseDeadline);
    return report(written, "succeeded", deps, attempt);
  }
  if (settled.kind === "forced") {
    const { end: forced } = settled;
    if (forced.kind === "lease_lost") {
      deps.metrics.fencedWrites.inc({ operation: "run" });
      attempt.log.warn({ reason: forced.reason.message }, "lease lost while running; this attempt writes nothing");
      return "lease_lost";
    }
    if (forced.kind === "shutdown") return report(await endAttempt(deps, running, "interrupted", forced.reason, 0), "interrupted", deps, attempt);
    return report(await endAttempt(deps, running, "timeout", forced.reason, backoff(definition, running)), "timeout", deps, attempt);
  }
  const { error } = settled;
  if (error instanceof RetryAfter) return report(await endAttempt(deps, running, "retry_after", error, error.delayMs), "retry_after", deps, attempt);
  if (error instanceof PermanentError) return report(await endAttempt(deps, running, "failed", error, 0, true), "failed", deps, attempt);
  attempt.log.warn({ err: toStoredError(error) }, "attempt failed");
  return report(await endAttempt(deps, running, "failed", error, backoff(definition, running)), "failed", deps, attempt);
}

function backoff(definition: AnyJobDefinition, running: RunningJob): number {
  return retryDelayMs(definition.backoff, running.job.attempts);
}

/** Write an attempt's end other than success. Whatever was thrown is recorded, `null` and `undefined` included. */
function endAttempt(
  deps: ExecutorDeps,
  running: RunningJob,
  outcome: "failed" | "timeout" | "retry_after" | "interrupted",
  error: unknown,
  delayMs: number,
  permanent = false,
): Promise<WriteResult> {
  return deps.writer.end(
    { jobId: running.job.id, executionId: running.executionId, outcome, error: JSON.stringify(toStoredError(error)), delayMs, permanent },
    running.leaseDeadline,
  );
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
