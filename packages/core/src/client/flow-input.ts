import type { AnyJobDefinition, PayloadInput } from "../core/define-job.js";
import type { BatchCallbackWhen, DependencyPolicy } from "../core/flows.js";
import type { Job } from "../core/model.js";
import type { TraceContext } from "../core/trace-context.js";
import type { Queryable } from "../store/db.js";
import type { KnownFields } from "../core/validate.js";
import type { EnqueueOptions } from "./enqueue.js";

// What `flows.enqueue` and `flows.enqueueBatch` take and return; the graph is written by enqueue-flow.ts.

/**
 * One dependency of a flow's job: another job of the flow by its name
 * (`node`), or a job that already exists (`jobId`), each with an optional
 * policy (default: the job's `onDependencyFailure`). A bare string names a node.
 */
export type FlowDependency =
  | string
  | {
      /** The name of a job in the same flow. */
      node: string;
      /** What happens to the dependent when this one ends other than succeeded. */
      onFailure?: DependencyPolicy;
    }
  | {
      /** The id of a job that already exists (same tenant). */
      jobId: string;
      /** What happens to the dependent when this one ends other than succeeded. */
      onFailure?: DependencyPolicy;
    };

/** Options of one job in a flow or batch. Tenant, idempotency and transaction are the flow's. */
export type FlowJobOptions = Pick<EnqueueOptions, "runAt" | "delayMs" | "priority" | "queue" | "maxAttempts" | "limitKey">;

const FLOW_JOB_OPTION_FIELDS: KnownFields<FlowJobOptions> = { runAt: true, delayMs: true, priority: true, queue: true, maxAttempts: true, limitKey: true };

/** The fields of each input of `flows.enqueue` and `flows.enqueueBatch`, for the unknown-field rule. */
export const FLOW_FIELDS = {
  flow: { jobs: true, name: true, idempotencyKey: true, tenant: true, tx: true, traceContext: true } satisfies KnownFields<FlowInput>,
  job: { ...FLOW_JOB_OPTION_FIELDS, job: true, payload: true, dependsOn: true, onDependencyFailure: true } satisfies KnownFields<FlowJob>,
  batch: { jobs: true, callback: true, name: true, idempotencyKey: true, tenant: true, tx: true, traceContext: true } satisfies KnownFields<BatchInput>,
  member: { ...FLOW_JOB_OPTION_FIELDS, job: true, payload: true } satisfies KnownFields<BatchMember>,
  callback: { ...FLOW_JOB_OPTION_FIELDS, job: true, payload: true, when: true } satisfies KnownFields<BatchInput["callback"]>,
  node: { node: true, onFailure: true },
  jobId: { jobId: true, onFailure: true },
} as const;

/**
 * The payload a job given as `J` takes: a definition's payload input type,
 * so that a payload written beside its definition is type-checked as
 * `enqueue` checks it; anything for a kind given by name (checked by its
 * schema when enqueued), and for `AnyJobDefinition` (whose schema is any).
 */
export type PayloadFor<J> = J extends AnyJobDefinition ? (0 extends 1 & PayloadInput<J> ? unknown : PayloadInput<J>) : unknown;

/** One job of a flow: what to run, and what it waits for. `J`: the job as given, which types the payload. */
export interface FlowJob<J extends AnyJobDefinition | string = AnyJobDefinition | string> extends FlowJobOptions {
  /** The job definition, or its kind name. */
  job: J;
  /** The payload, validated by the kind's schema (typed by the definition). */
  payload: PayloadFor<J>;
  /** What it waits for. Default: nothing (it is ready at once). */
  dependsOn?: readonly FlowDependency[];
  /**
   * The policy of each dependency that names none.
   * @defaultValue `DEFAULT_DEPENDENCY_POLICY` ("fail")
   */
  onDependencyFailure?: DependencyPolicy;
}

/** A typed flow job: `flowJob(sendEmail, { to }, { dependsOn: ["charge"] })` checks the payload against the definition. */
export function flowJob<D extends AnyJobDefinition>(job: D, payload: PayloadInput<D>, options: Omit<FlowJob, "job" | "payload"> = {}): FlowJob {
  return { job, payload, ...options };
}

/** The jobs given as the values of `J`, by name: each one's payload typed by its own job. */
export type FlowJobs<J extends Readonly<Record<string, AnyJobDefinition | string>>> = { readonly [K in keyof J]: FlowJob<J[K]> };

/** A graph of jobs to enqueue in one call. `J`: each job as given, by name (inferred), which types its payload. */
export interface FlowInput<J extends Readonly<Record<string, AnyJobDefinition | string>> = Record<string, AnyJobDefinition | string>> {
  /** The jobs by name (1 to 255 characters each), at most `MAX_FLOW_JOBS` (100,000). */
  jobs: FlowJobs<J>;
  /** A label for people (shown by the API, CLI and dashboard). Default: none. */
  name?: string;
  /** The same key (per tenant) with the same request returns the flow it first created; a different request is refused with `FlowIdempotencyConflictError`. */
  idempotencyKey?: string;
  /** Every job's tenant. Default `"default"`. */
  tenant?: string;
  /** Enqueue inside your transaction: the flow exists only if it commits. */
  tx?: Queryable;
  /** The W3C trace context to enqueue in, as `EnqueueOptions.traceContext`. Default: the active context when tracing. */
  traceContext?: TraceContext;
}

/** What `flows.enqueue` returns. */
export interface EnqueuedFlow {
  /** The flow's id (UUIDv7). */
  id: string;
  /** False when an idempotency key returned a flow created before. */
  created: boolean;
  /** Every job of the flow by its name, as enqueued (`waiting` when it has dependencies). */
  jobs: Record<string, Job>;
}

/** One member of a batch (or item of `enqueueMany`'s kind): a job and its payload, typed by the job as given (`J`). */
export type BatchMember<J extends AnyJobDefinition | string = AnyJobDefinition | string> = {
  /** The member's job definition, or its kind name. */
  job: J;
  /** Its payload, validated by the kind's schema (typed by the definition). */
  payload: PayloadFor<J>;
} & FlowJobOptions;

/**
 * A set of jobs and the callback that runs once every one of them has
 * ended. `M`: the members' jobs as given, `C`: the callback's (inferred),
 * which type their payloads.
 */
export interface BatchInput<
  M extends ReadonlyArray<AnyJobDefinition | string> = ReadonlyArray<AnyJobDefinition | string>,
  C extends AnyJobDefinition | string = AnyJobDefinition | string,
> {
  /** The members, at most `MAX_FLOW_JOBS - 1`. */
  jobs: { readonly [K in keyof M]: BatchMember<M[K]> };
  /**
   * The callback job, made `waiting` with the batch and released exactly
   * once, when every member has ended, as `when` says (default `"always"`).
   * Its handler reads the counts and the failed members with
   * `ctx.dependencySummary()`.
   */
  callback: {
    /** The callback's job definition, or its kind name. */
    job: C;
    /** Its payload, validated by the kind's schema (typed by the definition). */
    payload: PayloadFor<C>;
    /** Which endings of the members release it: always, only if all succeeded, or only if one failed. */
    when?: BatchCallbackWhen;
  } & FlowJobOptions;
  /** As `FlowInput.name`. */
  name?: string;
  /** As `FlowInput.idempotencyKey`. */
  idempotencyKey?: string;
  /** As `FlowInput.tenant`. */
  tenant?: string;
  /** As `FlowInput.tx`. */
  tx?: Queryable;
  /** As `FlowInput.traceContext`. */
  traceContext?: TraceContext;
}

/** What `flows.enqueueBatch` returns. */
export interface EnqueuedBatch {
  /** The batch's id (a flow of kind `batch`). */
  id: string;
  /** False when an idempotency key returned a batch created before. */
  created: boolean;
  /** The members, in the order given. */
  jobs: Job[];
  /** The callback job. */
  callback: Job;
}
