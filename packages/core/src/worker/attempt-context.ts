import type { Logger } from "pino";
import type { AnyJobDefinition, JobContext, JobInfo, ResultOf } from "../core/define-job.js";
import type { DependencyOutcome, DependencySummary } from "../core/flows.js";
import type { FlowStore } from "../store/flow-store.js";
import { parseCronTickKey } from "../core/cron.js";
import type { Queryable } from "../store/db.js";
import type { AttemptTools, HandlerTools } from "./handler-tools.js";
import type { Attempt } from "./attempt.js";
import { DurableRun, type DurableDeps } from "./durable-run.js";
import type { DurableFunctions } from "../core/steps.js";

/** What every attempt's context of one worker shares. */
export interface ContextDeps {
  log: Logger;
  workerId: string;
  /** Renew one job's lease now (ctx.heartbeat). */
  renew(running: Attempt): Promise<boolean>;
  /** ctx.progress and ctx.transaction. */
  tools: HandlerTools;
  /** ctx.dependencies, ctx.resultsOf and ctx.dependencySummary read here. */
  flows: FlowStore;
  /** ctx.step, ctx.sleep and ctx.waitForEvent. */
  durable: DurableDeps;
}

/**
 * The context a handler receives. Made for every claimed job, so it is a
 * class whose parts are built when first read: the job info, the pino child
 * logger, the tools behind `progress` and `transaction`, and the functions
 * themselves (as own closures, so `const { heartbeat } = ctx` still works).
 * A handler that reads only its payload, as most do, costs one object.
 */
export class AttemptContext implements JobContext<unknown> {
  readonly payload: unknown;
  #job: JobInfo | undefined;
  #log: Logger | undefined;
  #tools: AttemptTools | undefined;
  #heartbeat: (() => Promise<boolean>) | undefined;
  #progress: ((value: unknown) => Promise<boolean>) | undefined;
  #transaction: (<T>(work: (tx: Queryable) => Promise<T>) => Promise<T>) | undefined;
  #durable: DurableRun | undefined;

  constructor(
    private readonly running: Attempt,
    private readonly deps: ContextDeps,
  ) {
    this.payload = running.job.payload;
  }

  get signal(): AbortSignal {
    return this.running.signal;
  }

  get job(): JobInfo {
    if (this.#job) return this.#job;
    const { job, executionId } = this.running;
    return (this.#job = {
      id: job.id,
      kind: job.kind,
      tenant: job.tenant,
      queue: job.queue,
      attempt: job.attempts,
      maxAttempts: job.maxAttempts,
      executionId,
      workerId: this.deps.workerId,
      cronTick: parseCronTickKey(job.idempotencyKey),
    });
  }

  get log(): Logger {
    if (this.#log) return this.#log;
    const { job, executionId } = this.running;
    return (this.#log = this.deps.log.child({ jobId: job.id, kind: job.kind, attempt: job.attempts, executionId }));
  }

  get heartbeat(): () => Promise<boolean> {
    return (this.#heartbeat ??= () => this.deps.renew(this.running));
  }

  get progress(): (value: unknown) => Promise<boolean> {
    return (this.#progress ??= (value) => this.tools().progress(value));
  }

  get transaction(): <T>(work: (tx: Queryable) => Promise<T>) => Promise<T> {
    return (this.#transaction ??= (work) => this.tools().transaction(work));
  }

  get dependencies(): () => Promise<DependencyOutcome[]> {
    return () => this.deps.flows.jobDependencyOutcomes(this.running.job.id);
  }

  get resultsOf(): <D extends AnyJobDefinition>(definition: D) => Promise<Array<ResultOf<D>>> {
    return async <D extends AnyJobDefinition>(definition: D) => {
      const outcomes = await this.deps.flows.jobDependencyOutcomes(this.running.job.id);
      return outcomes.filter((o) => o.kind === definition.kind && o.status === "succeeded").map((o) => o.result as ResultOf<D>);
    };
  }

  get dependencySummary(): () => Promise<DependencySummary> {
    return () => this.deps.flows.jobDependencySummary(this.running.job.id);
  }

  get step(): DurableFunctions["step"] {
    return this.durable().step as DurableFunctions["step"];
  }

  get sleep(): DurableFunctions["sleep"] {
    return this.durable().sleep;
  }

  get waitForEvent(): DurableFunctions["waitForEvent"] {
    return this.durable().waitForEvent;
  }

  private durable(): DurableRun {
    return (this.#durable ??= new DurableRun(this.running, this.deps.durable, () => this.log));
  }

  /** The attempt's tools if the handler reached for them (progress, transaction); undefined otherwise. */
  get usedTools(): AttemptTools | undefined {
    return this.#tools;
  }

  private tools(): AttemptTools {
    return (this.#tools ??= this.deps.tools.forAttempt(this.running, () => this.log));
  }
}
