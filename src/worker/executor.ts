import type { Logger } from "pino";
import type { AnyJobDefinition, JobContext } from "../client/define-job.js";
import { retryDelayMs } from "../core/backoff.js";
import { parseCronTickKey } from "../core/cron.js";
import { PermanentError, RetryAfter } from "../core/errors.js";
import { encodeJson } from "../core/json.js";
import type { WorkerMetrics } from "../metrics/worker-metrics.js";
import { JobTimeoutError } from "./abort-reasons.js";
import type { AttemptWriter, WriteResult } from "./attempt-writer.js";
import type { HandlerTools } from "./handler-tools.js";
import { reportCommitted } from "./committed-outcome.js";
import { toStoredError } from "./errors-to-store.js";
import type { RunningJob, Settled } from "./running-job.js";


export interface ExecutorDeps {
  writer: AttemptWriter;
  metrics: WorkerMetrics;
  log: Logger;
  workerId: string;
  /** Renew one job's lease now (ctx.heartbeat). */
  renew(running: RunningJob): Promise<boolean>;
  /** ctx.progress and ctx.transaction. */
  tools: HandlerTools;
}

/**
 * Run one claimed attempt to its end: call the handler with its context,
 * enforce the time limit, and record the outcome. Never throws; whatever
 * the handler does (throw a non-Error, never settle, reject later) ends as
 * a recorded outcome or, when the lease was lost, as no write at all.
 */
export async function executeAttempt(definition: AnyJobDefinition, running: RunningJob, deps: ExecutorDeps): Promise<void> {
  const { job, executionId } = running;
  // The attempt's logger is a pino child, made when first used: a job that
  // logs nothing (most, at the default level) does not pay for one.
  let attemptLog: Logger | undefined;
  const logOf = (): Logger => (attemptLog ??= deps.log.child({ jobId: job.id, kind: job.kind, attempt: job.attempts, executionId }));
  const tools = deps.tools.forAttempt(running, logOf);
  const context: JobContext<unknown> = {
    payload: job.payload,
    get signal() {
      return running.signal;
    },
    job: {
      id: job.id,
      kind: job.kind,
      tenant: job.tenant,
      queue: job.queue,
      attempt: job.attempts,
      maxAttempts: job.maxAttempts,
      executionId,
      workerId: deps.workerId,
      cronTick: parseCronTickKey(job.idempotencyKey),
    },
    get log() {
      return logOf();
    },
    heartbeat: () => deps.renew(running),
    progress: tools.progress,
    transaction: tools.transaction,
  };
  const started = performance.now();
  const timer =
    definition.timeoutMs > 0
      ? setTimeout(() => running.force({ kind: "timeout", reason: new JobTimeoutError(definition.timeoutMs) }), definition.timeoutMs)
      : undefined;
  const settled = await running.run(() => definition.handler(context));
  clearTimeout(timer);
  running.phase = "writing";
  if (tools.used) await tools.finish(settled.kind === "forced" && settled.end.kind === "lease_lost");
  const seconds = (performance.now() - started) / 1000;
  // A ctx.transaction that committed already completed the job: write nothing more.
  const outcome = tools.completed ? reportCommitted(settled, logOf()) : await record(definition, running, settled, deps, logOf);
  deps.metrics.completed.inc({ kind: job.kind, outcome });
  deps.metrics.duration.observe({ kind: job.kind, outcome }, seconds);
}

/** Write the attempt's outcome; returns the outcome label for metrics. */
async function record(definition: AnyJobDefinition, running: RunningJob, settled: Settled, deps: ExecutorDeps, log: () => Logger): Promise<string> {
  if (settled.kind === "returned") {
    const { value } = settled;
    if (value instanceof RetryAfter) return report(await endAttempt(deps, running, "retry_after", value, value.delayMs), "retry_after", deps, log);
    let result: string | null;
    try {
      result = value === undefined ? null : encodeJson(value, "result");
    } catch (error) {
      return report(await endAttempt(deps, running, "failed", error, backoff(definition, running)), "failed", deps, log);
    }
    const written = await deps.writer.complete({ jobId: running.job.id, executionId: running.executionId, result }, running.leaseDeadline);
    return report(written, "succeeded", deps, log);
  }
  if (settled.kind === "forced") {
    const { end: forced } = settled;
    if (forced.kind === "lease_lost") {
      deps.metrics.fencedWrites.inc({ operation: "run" });
      log().warn({ reason: forced.reason.message }, "lease lost while running; this attempt writes nothing");
      return "lease_lost";
    }
    if (forced.kind === "shutdown") return report(await endAttempt(deps, running, "interrupted", forced.reason, 0), "interrupted", deps, log);
    return report(await endAttempt(deps, running, "timeout", forced.reason, backoff(definition, running)), "timeout", deps, log);
  }
  const { error } = settled;
  if (error instanceof RetryAfter) return report(await endAttempt(deps, running, "retry_after", error, error.delayMs), "retry_after", deps, log);
  if (error instanceof PermanentError) return report(await endAttempt(deps, running, "failed", error, 0, true), "failed", deps, log);
  log().warn({ err: toStoredError(error) }, "attempt failed");
  return report(await endAttempt(deps, running, "failed", error, backoff(definition, running)), "failed", deps, log);
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

function report(written: WriteResult, outcome: string, deps: ExecutorDeps, log: () => Logger): string {
  if (!written.written) {
    log().warn({ outcome }, "outcome not recorded: the job is no longer ours (fenced)");
    return "lease_lost";
  }
  const status = written.job?.status;
  if (status === "dead") {
    deps.metrics.deadLettered.inc({ kind: written.job!.kind });
    log().error({ err: written.job!.lastError }, "job moved to the dead-letter queue");
  }
  if (status === "cancelled") return "cancelled";
  return outcome;
}
