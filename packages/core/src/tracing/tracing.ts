import type * as OtelApi from "@opentelemetry/api";
import type { Attributes, Context, Link, Span, SpanContext, Tracer, TracerProvider } from "@opentelemetry/api";
import type { ClaimedJob } from "../core/model.js";
import { encodeTraceContext, parseTraceparent, type TraceContext } from "../core/trace-context.js";

/**
 * OpenTelemetry spans for enqueues and attempts (docs/tracing.md).
 *
 * `@opentelemetry/api` is an optional peer dependency: it is imported
 * dynamically, once, and everything here is a no-op when it is missing.
 * With it installed but no tracer provider registered (the API's no-op
 * provider), `producerTracer()` and `attemptSpan()` return undefined after a
 * global lookup and two comparisons: no span, context or attribute object is
 * made, so a worker's hot path allocates nothing for tracing.
 *
 * The OpenTelemetry types stay inside this module; what it hands out is
 * typed with Conveyor's own (`TraceContext`, `AttemptSpan`), so the
 * package's declarations never need `@opentelemetry/api` to compile.
 */

type Api = typeof OtelApi;

/** The instrumentation scope: the package's name (its version is not read at run time). */
const TRACER_NAME = "conveyor-jobs";

/** `messaging.system`: not one of the well-known values, so the package's own name. */
const MESSAGING_SYSTEM = "conveyor";

/** The outcomes that mark an attempt's span as an error (the executor's labels). */
const ERROR_OUTCOMES: ReadonlySet<string> = new Set(["failed", "timeout", "lease_lost", "lease_expired", "cancelled"]);

let api: Api | null | undefined; // undefined until the import settles; null when the package is missing
let noopProvider: TracerProvider | undefined;
let loading: Promise<void> | undefined;

/** Import `@opentelemetry/api` once per process; resolves (never rejects) when that is settled. */
export function loadTracingApi(): Promise<void> {
  return (loading ??= import("@opentelemetry/api").then(
    (module) => {
      api = module;
      // A proxy with no delegate answers with the API's one no-op provider: what "nothing registered" looks like.
      noopProvider = new module.ProxyTracerProvider().getDelegate();
    },
    () => {
      api = null;
    },
  ));
}

/** How attempts relate to the enqueue's span. */
export type AttemptSpanParent = "link" | "child";

/** What an enqueue's PRODUCER span describes. */
export interface ProducerInfo {
  queue: string;
  kind: string;
  tenant: string;
  /** The job's id, for a single enqueue. */
  jobId?: string;
  /** How many jobs the call enqueues. */
  count: number;
}

/** One attempt's CONSUMER span: the handler runs inside it, and its end records the outcome. */
export interface AttemptSpan {
  /** Run `work` with this span as the active context, so the handler's own spans are its children. */
  run<T>(work: () => T): T;
  /** Record the attempt's outcome (an executor label such as `failed`) and the error, if any, and end the span. */
  end(outcome: string, error: unknown): void;
}

/**
 * Spans for one client and its workers. `enabled: false` turns them off
 * entirely (trace contexts given explicitly are still stored).
 */
export class Tracing {
  #tracer: Tracer | undefined;
  #tracerOf: TracerProvider | undefined;

  constructor(
    readonly enabled: boolean,
    /** "link" (the default): each attempt starts its own trace, linked to the enqueue's span. "child": attempts are children of it. */
    readonly attemptParent: AttemptSpanParent,
  ) {
    if (enabled) void loadTracingApi();
  }

  /** Resolves once `@opentelemetry/api` is loaded or known to be missing. */
  ready(): Promise<void> {
    return this.enabled ? loadTracingApi() : Promise.resolve();
  }

  /** True while tracing is on, the API is loaded and a tracer provider other than the no-op one is registered. */
  get active(): boolean {
    return this.tracer() !== undefined;
  }

  private tracer(): Tracer | undefined {
    if (!this.enabled || !api) return undefined;
    const global = api.trace.getTracerProvider() as TracerProvider & { getDelegate?: () => TracerProvider };
    // The global is a proxy (of whichever copy of the API registered it); its delegate is the real provider.
    const provider = typeof global.getDelegate === "function" ? global.getDelegate() : global;
    if (provider === noopProvider) return undefined;
    if (provider !== this.#tracerOf) {
      this.#tracerOf = provider;
      this.#tracer = provider.getTracer(TRACER_NAME);
    }
    return this.#tracer;
  }

  /**
   * Run an enqueue in a PRODUCER span, and give `work` the trace context
   * to store with its jobs (JSON text, jobs.trace_context). The span's
   * parent is `parent` when given (the HTTP API's traceparent header), else
   * the active context. Without a tracer no span is made and `work` gets
   * undefined: each job keeps the context its own options gave, if any.
   */
  async produce<T>(info: ProducerInfo, parent: TraceContext | undefined, work: (traceContext: string | undefined) => Promise<T>): Promise<T> {
    if (this.enabled && api === undefined) await loadTracingApi();
    const tracer = this.tracer();
    if (!tracer || !api) return work(undefined);
    // The caller's traceparent, unless the active span is already of that trace (HTTP instrumentation's server span).
    const active = api.context.active();
    const activeTraceId = api.trace.getSpanContext(active)?.traceId;
    const parentContext =
      parent === undefined || activeTraceId === parseTraceparent(parent.traceparent)?.traceId ? active : contextOf(api, api.ROOT_CONTEXT, parent);
    const attributes: Attributes = {
      "messaging.system": MESSAGING_SYSTEM,
      "messaging.operation.type": "send",
      "messaging.operation.name": "enqueue",
      "messaging.destination.name": info.queue,
      "conveyor.job.kind": info.kind,
      "conveyor.tenant": info.tenant,
    };
    if (info.jobId !== undefined) attributes["messaging.message.id"] = info.jobId;
    if (info.count !== 1) attributes["messaging.batch.message_count"] = info.count;
    const span = tracer.startSpan(`send ${info.queue}`, { kind: api.SpanKind.PRODUCER, attributes }, parentContext);
    try {
      return await api.context.with(api.trace.setSpan(parentContext, span), () => work(encodeTraceContext(traceContextOf(span.spanContext()))));
    } catch (error) {
      failSpan(api, span, error, "enqueue failed");
      throw error;
    } finally {
      span.end();
    }
  }

  /**
   * A CONSUMER span for one attempt, or undefined when no tracer is
   * registered. It links to the trace context the job was enqueued with
   * (or, with `attemptParent: "child"`, is its child), and to each of
   * `extraLinks`: the hook for jobs that follow others (a dependent job
   * links its parents' contexts). Without a stored context the attempt
   * starts a trace of its own, as a cron tick's job does.
   */
  attemptSpan(job: ClaimedJob, workerId: string, extraLinks?: readonly TraceContext[]): AttemptSpan | undefined {
    const tracer = this.tracer();
    if (!tracer || !api) return undefined;
    const stored = job.traceContext ?? undefined;
    const child = stored !== undefined && this.attemptParent === "child";
    const parentContext = child ? contextOf(api, api.ROOT_CONTEXT, stored) : api.ROOT_CONTEXT;
    const links: Link[] = [];
    if (stored !== undefined && !child) pushLink(links, stored);
    for (const extra of extraLinks ?? []) pushLink(links, extra);
    const span = tracer.startSpan(
      `process ${job.queue}`,
      {
        kind: api.SpanKind.CONSUMER,
        root: !child,
        links,
        attributes: {
          "messaging.system": MESSAGING_SYSTEM,
          "messaging.operation.type": "process",
          "messaging.operation.name": "process",
          "messaging.destination.name": job.queue,
          "messaging.message.id": job.id,
          "conveyor.job.kind": job.kind,
          "conveyor.job.attempt": job.attempts,
          "conveyor.job.max_attempts": job.maxAttempts,
          "conveyor.tenant": job.tenant,
          "conveyor.worker_id": workerId,
        },
      },
      parentContext,
    );
    if (job.executionId !== "") span.setAttribute("conveyor.execution_id", job.executionId);
    return new OtelAttemptSpan(api, span, api.trace.setSpan(parentContext, span));
  }

  /**
   * A CONSUMER span for one batch of a batch handler, linked to the trace
   * context each of its jobs was enqueued with (each job's own attempt span
   * stays in its own trace); undefined unless a tracer provider is
   * registered. The batch handler runs inside it.
   */
  batchSpan(queue: string, kind: string, batchId: string, jobs: readonly ClaimedJob[]): AttemptSpan | undefined {
    const tracer = this.tracer();
    if (!tracer || !api) return undefined;
    const links: Link[] = [];
    for (const job of jobs) if (job.traceContext) pushLink(links, job.traceContext);
    const span = tracer.startSpan(
      `process ${queue} batch`,
      {
        kind: api.SpanKind.CONSUMER,
        root: true,
        links,
        attributes: {
          "messaging.system": MESSAGING_SYSTEM,
          "messaging.operation.type": "process",
          "messaging.operation.name": "process",
          "messaging.destination.name": queue,
          "messaging.batch.message_count": jobs.length,
          "conveyor.job.kind": kind,
          "conveyor.batch.id": batchId,
        },
      },
      api.ROOT_CONTEXT,
    );
    return new OtelAttemptSpan(api, span, api.trace.setSpan(api.ROOT_CONTEXT, span));
  }

  /**
   * An INTERNAL span for one durable step, sleep or wait
   * (worker/durable-run.ts), a child of the span active where it is called
   * (the attempt's, inside its handler); undefined unless a tracer provider
   * is registered. Ended with the step's outcome: `completed`, `replayed`
   * (its record returned, its function not called), `failed`, `suspended`,
   * `received` or `timed_out`.
   */
  stepSpan(name: string, kind: "step" | "sleep" | "wait", jobId: string): AttemptSpan | undefined {
    const tracer = this.tracer();
    if (!tracer || !api) return undefined;
    const parent = api.context.active();
    const span = tracer.startSpan(
      `${kind} ${name}`,
      { kind: api.SpanKind.INTERNAL, attributes: { "conveyor.step.name": name, "conveyor.step.kind": kind, "messaging.message.id": jobId } },
      parent,
    );
    return new OtelAttemptSpan(api, span, api.trace.setSpan(parent, span));
  }

  /**
   * Record attempts that a reclaim sweep ended as `lease_expired`: their own
   * spans died with the worker that ran them (a crash, a pause past the
   * lease), so each gets a CONSUMER span of its own, ended at once, with the
   * outcome and the same links or parent as its attempt's would have had.
   */
  leaseExpired(jobs: readonly LeaseExpiredJob[], workerId: string): void {
    for (const job of jobs) {
      const span = this.attemptSpan({ ...job, payload: null, executionId: "", idempotencyKey: null, waitedMs: 0 }, workerId);
      span?.end("lease_expired", new Error("lease expired: the worker running this attempt stopped renewing its lease"));
    }
  }
}

/** A job whose attempt a reclaim sweep ended, as `leaseExpired` takes it. */
export interface LeaseExpiredJob {
  id: string;
  tenant: string;
  kind: string;
  queue: string;
  /** The attempt that expired, counted from 1. */
  attempts: number;
  maxAttempts: number;
  traceContext: TraceContext | null;
}

class OtelAttemptSpan implements AttemptSpan {
  constructor(
    private readonly api: Api,
    private readonly span: Span,
    private readonly context: Context,
  ) {}

  run<T>(work: () => T): T {
    return this.api.context.with(this.context, work);
  }

  end(outcome: string, error: unknown): void {
    this.span.setAttribute("conveyor.outcome", outcome);
    if (ERROR_OUTCOMES.has(outcome)) failSpan(this.api, this.span, error, outcome);
    this.span.end();
  }
}

function failSpan(api: Api, span: Span, error: unknown, fallback: string): void {
  if (error instanceof Error) span.recordException(error);
  else if (error !== undefined && error !== null) span.recordException(String(error));
  span.setStatus({ code: api.SpanStatusCode.ERROR, message: error instanceof Error ? `${fallback}: ${error.message}` : fallback });
}

function pushLink(links: Link[], context: TraceContext): void {
  const spanContext = spanContextOf(context);
  if (spanContext) links.push({ context: spanContext });
}

/** The context whose remote parent is `trace`; `base` unchanged when it is not a valid traceparent. */
function contextOf(api: Api, base: Context, trace: TraceContext): Context {
  const spanContext = spanContextOf(trace);
  return spanContext ? api.trace.setSpanContext(base, spanContext) : base;
}

function spanContextOf(trace: TraceContext): SpanContext | undefined {
  const parsed = parseTraceparent(trace.traceparent);
  if (!parsed || !api) return undefined;
  const spanContext: SpanContext = { traceId: parsed.traceId, spanId: parsed.spanId, traceFlags: parsed.flags & 0xff, isRemote: true };
  if (trace.tracestate) spanContext.traceState = api.createTraceState(trace.tracestate);
  return spanContext;
}

function traceContextOf(spanContext: SpanContext): TraceContext {
  const flags = (spanContext.traceFlags & 0xff).toString(16).padStart(2, "0");
  const context: TraceContext = { traceparent: `00-${spanContext.traceId}-${spanContext.spanId}-${flags}` };
  const state = spanContext.traceState?.serialize();
  if (state) context.tracestate = state;
  return context;
}
