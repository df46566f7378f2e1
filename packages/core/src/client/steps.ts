import { DEFAULT_TENANT, MAX_STEP_RESULT_BYTES, MAX_STEP_NAME_LENGTH } from "../core/defaults.js";
import { ConflictError, NotFoundError, ValidationError } from "../core/errors.js";
import { encodeJson } from "../core/json.js";
import type { Job } from "../core/model.js";
import type { SendEventInput, SentEvent, StepRecord } from "../core/steps.js";
import { TRANSITIONS } from "../core/transitions.js";
import { checkKnownFields, checkLabel, checkTenant } from "../core/validate.js";
import type { Store } from "../store/store.js";
import { checkId, type TenantScope, scopeTenant } from "./scope.js";

const RERUNNABLE = Object.keys(TRANSITIONS.rerun_from_step);

/**
 * Durable execution from outside a handler: send events, read a job's
 * steps, resume a job or rerun it from a step (`conveyor.steps`;
 * `conveyor.sendEvent` is here too).
 */
export class Steps {
  constructor(private readonly store: Store) {}

  /**
   * Store an event and wake every job of its tenant whose `waitForEvent`
   * waits for it (its name and key): each such wait receives it, once, and
   * its job runs again at once. A wait that starts later takes it too when
   * the event was sent after its job was enqueued (see `waitForEvent`).
   * Throws `ValidationError` for a bad name, key, tenant or payload.
   *
   * @example
   * await conveyor.sendEvent({ event: "invoice.paid", key: "acct_1", payload: { amount: 42 } });
   */
  async send(input: SendEventInput): Promise<SentEvent> {
    checkKnownFields(input, { event: true, key: true, payload: true, tenant: true }, "a field of sendEvent's input");
    checkLabel(input.event, "event", MAX_STEP_NAME_LENGTH);
    const key = input.key ?? "";
    checkLabel(key, "key", MAX_STEP_NAME_LENGTH, ValidationError, true);
    const tenant = input.tenant ?? DEFAULT_TENANT;
    checkTenant(tenant);
    const payload = input.payload === undefined ? null : encodeJson(input.payload, "payload");
    if (payload !== null && Buffer.byteLength(payload) > MAX_STEP_RESULT_BYTES) {
      throw new ValidationError(`payload must be at most ${MAX_STEP_RESULT_BYTES} bytes of JSON (MAX_STEP_RESULT_BYTES)`, [
        { path: "payload", message: `must be at most ${MAX_STEP_RESULT_BYTES} bytes of JSON` },
      ]);
    }
    return this.store.steps.eventSend(tenant, input.event, key, payload);
  }

  /** A job's steps, sleeps and waits in the order it first recorded them. Throws `NotFoundError` when there is no such job. */
  async list(jobId: string, scope: TenantScope = {}): Promise<StepRecord[]> {
    checkId(jobId);
    const tenant = scopeTenant(scope);
    const records = await this.store.steps.jobStepsList(jobId, tenant);
    if (records.length === 0 && !(await this.store.jobs.jobGet(jobId, tenant))) throw new NotFoundError(`job ${jobId} not found`);
    return records;
  }

  /**
   * Run a job again keeping every recorded step: a dead job leaves the
   * dead-letter queue with fresh attempts and replays what it recorded.
   * Applies to jobs that are dead, sleeping, queued or retrying; throws
   * `ConflictError` for others (running, succeeded, cancelled, waiting) and
   * `NotFoundError` when there is no such job.
   */
  async resume(jobId: string, scope: TenantScope = {}): Promise<Job> {
    return this.rerun(jobId, null, scope);
  }

  /**
   * Run a job again from its step (or sleep, or wait) named `step`: that
   * record and every later one are forgotten, earlier ones replay. Applies
   * where `resume` does; throws `NotFoundError` when the job has no such
   * step.
   */
  async rerunFrom(jobId: string, step: string, scope: TenantScope = {}): Promise<Job> {
    checkLabel(step, "step", MAX_STEP_NAME_LENGTH);
    return this.rerun(jobId, step, scope);
  }

  private async rerun(jobId: string, step: string | null, scope: TenantScope): Promise<Job> {
    checkId(jobId);
    const tenant = scopeTenant(scope);
    const done = await this.store.steps.jobRerunFromStep(jobId, step, tenant);
    if (done.previousStatus === null) throw new NotFoundError(`job ${jobId} not found`);
    if (!done.stepFound) throw new NotFoundError(`job ${jobId} has no step named ${JSON.stringify(step)}`);
    if (!done.job) {
      throw new ConflictError(`job ${jobId} is ${done.previousStatus}; only a job that is ${RERUNNABLE.join(", ")} can be ${step === null ? "resumed" : "rerun from a step"}`);
    }
    return done.job;
  }
}
