import { context, type Span, SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { BasicTracerProvider, InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import type { Conveyor } from "../packages/core/src/conveyor.js";
import { defineJob } from "../packages/core/src/core/define-job.js";
import { COPY_MIN_ROWS, ENQUEUE_CHUNK_ROWS } from "../packages/core/src/core/defaults.js";
import type { ConveyorOptions } from "../packages/core/src/client/options.js";
import { type ApiTest, call, createApiTest } from "./http/support.js";
import { createTestConveyor, type TestConveyor } from "./helpers/database.js";
import { silent } from "./worker/support.js";
import { waitFor } from "./helpers/wait-for.js";

// One provider for the file, registered globally as an application's SDK
// would be; each test reads and clears what it exported.
const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const contextManager = new AsyncLocalStorageContextManager().enable();

beforeAll(() => {
  context.setGlobalContextManager(contextManager);
  trace.setGlobalTracerProvider(provider);
});
afterAll(async () => {
  await provider.shutdown();
  trace.disable();
  context.disable();
});
afterEach(() => exporter.reset());

const seenInHandler: Array<{ spanId: string | undefined; traceId: string | undefined }> = [];
const failFirst = new Set<string>();

const traced = defineJob({
  kind: "traced.work",
  queue: "tracing",
  schema: z.object({ n: z.number(), failOnce: z.boolean().default(false) }),
  backoff: { baseMs: 1, capMs: 1, jitter: 0 },
  maxAttempts: 3,
  async handler({ payload, job }) {
    await new Promise((resolve) => setImmediate(resolve)); // the active context must survive an await
    const active = trace.getActiveSpan()?.spanContext();
    seenInHandler.push({ spanId: active?.spanId, traceId: active?.traceId });
    // A span of the handler's own, as its HTTP or database client would make.
    trace.getTracer("handler").startActiveSpan("handler.step", (span: Span) => span.end());
    if (payload.failOnce && !failFirst.has(job.id)) {
      failFirst.add(job.id);
      throw new Error("first attempt fails");
    }
    return { n: payload.n };
  },
});

/** Runs until its signal aborts (a worker that stopped renewing its lease). */
const waiting = defineJob({
  kind: "traced.waiting",
  queue: "tracing",
  schema: z.object({}),
  async handler({ signal }) {
    if (!signal.aborted) await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
  },
});

const spans = (name?: string): ReadableSpan[] => exporter.getFinishedSpans().filter((span) => name === undefined || span.name === name);
const parentOf = (span: ReadableSpan): string | undefined => span.parentSpanContext?.spanId;

async function storedTraceContext(conveyor: Conveyor, id: string): Promise<{ traceparent: string; tracestate?: string } | null> {
  const { rows } = await conveyor.pool.query(`SELECT trace_context FROM "${conveyor.options.schema}".jobs WHERE id = $1`, [id]);
  return rows[0]!.trace_context;
}

async function runUntilDone(conveyor: Conveyor, ids: string[]): Promise<void> {
  const worker = conveyor.worker({ concurrency: 4, pollIntervalMs: 20, logger: silent });
  await worker.start();
  try {
    await waitFor("jobs to finish", async () => {
      const jobs = await Promise.all(ids.map((id) => conveyor.getJob(id)));
      return jobs.every((job) => job?.status === "succeeded" || job?.status === "dead");
    });
  } finally {
    await worker.stop();
  }
}

const traceparentOf = (span: ReadableSpan) => `00-${span.spanContext().traceId}-${span.spanContext().spanId}-0${span.spanContext().traceFlags}`;

describe("library enqueue and attempts (attempts linked)", () => {
  let test: TestConveyor;
  beforeAll(async () => {
    test = await createTestConveyor({ jobs: [traced, waiting], logger: silent });
  });
  afterAll(() => test.cleanup());

  it("makes a PRODUCER span as a child of the active span, and stores its context with the job", async () => {
    const job = await trace.getTracer("app").startActiveSpan("request", async (request: Span) => {
      try {
        return await test.conveyor.enqueue(traced, { n: 1 });
      } finally {
        request.end();
      }
    });
    const [producer] = spans("send tracing");
    const [request] = spans("request");
    expect(producer!.kind).toBe(SpanKind.PRODUCER);
    expect(parentOf(producer!)).toBe(request!.spanContext().spanId);
    expect(producer!.attributes).toMatchObject({
      "messaging.system": "conveyor",
      "messaging.operation.type": "send",
      "messaging.destination.name": "tracing",
      "messaging.message.id": job.id,
      "conveyor.job.kind": "traced.work",
      "conveyor.tenant": "default",
    });
    expect(await storedTraceContext(test.conveyor, job.id)).toEqual({ traceparent: traceparentOf(producer!) });
  });

  it("links a dependent job's attempt to the enqueue spans of its dependencies, and traces a flow's enqueue once", async () => {
    const parent = await test.conveyor.enqueue(traced, { n: 10 });
    const child = await test.conveyor.enqueue(traced, { n: 11 }, { dependsOn: [parent.id] });
    const flow = await test.conveyor.flows.enqueue({ jobs: { a: { job: traced, payload: { n: 12 } }, b: { job: traced, payload: { n: 13 }, dependsOn: ["a"] } } });
    const producers = spans("send tracing");
    expect(producers).toHaveLength(3); // the parent, the child, and one for the whole flow
    const [parentSend, childSend, flowSend] = producers;
    expect(flowSend!.attributes).toMatchObject({ "messaging.batch.message_count": 2 });
    for (const id of [flow.jobs.a!.id, flow.jobs.b!.id]) expect(await storedTraceContext(test.conveyor, id)).toEqual({ traceparent: traceparentOf(flowSend!) });
    await runUntilDone(test.conveyor, [parent.id, child.id, flow.jobs.a!.id, flow.jobs.b!.id]);
    const attemptOf = (id: string) => spans("process tracing").find((span) => span.attributes["messaging.message.id"] === id)!;
    expect(attemptOf(child.id).links.map((link) => link.context.spanId)).toEqual([childSend!.spanContext().spanId, parentSend!.spanContext().spanId]);
    // A flow's jobs share their enqueue's span: one link, not the same one twice.
    expect(attemptOf(flow.jobs.b!.id).links.map((link) => link.context.spanId)).toEqual([flowSend!.spanContext().spanId]);
  });

  it("runs each attempt in a CONSUMER span of its own trace, linked to the PRODUCER span, active in the handler", async () => {
    const first = await test.conveyor.listJobs({ kind: traced.kind });
    await runUntilDone(test.conveyor, first.items.map((job) => job.id)); // the jobs earlier tests enqueued
    exporter.reset();
    seenInHandler.length = 0;
    const job = await test.conveyor.enqueue(traced, { n: 2, failOnce: true });
    await runUntilDone(test.conveyor, [job.id]);
    const [producer] = spans("send tracing");
    const attempts = spans("process tracing")
      .filter((span) => span.attributes["messaging.message.id"] === job.id)
      .sort((a, b) => Number(a.attributes["conveyor.job.attempt"]) - Number(b.attributes["conveyor.job.attempt"]));
    expect(attempts).toHaveLength(2);
    for (const [index, attempt] of attempts.entries()) {
      expect(attempt.kind).toBe(SpanKind.CONSUMER);
      expect(attempt.parentSpanContext).toBeUndefined();
      expect(attempt.spanContext().traceId).not.toBe(producer!.spanContext().traceId);
      expect(attempt.links.map((link) => link.context.spanId)).toEqual([producer!.spanContext().spanId]);
      expect(attempt.attributes).toMatchObject({
        "messaging.system": "conveyor",
        "messaging.operation.type": "process",
        "messaging.destination.name": "tracing",
        "messaging.message.id": job.id,
        "conveyor.job.kind": "traced.work",
        "conveyor.job.attempt": index + 1,
        "conveyor.tenant": "default",
      });
      expect(typeof attempt.attributes["conveyor.execution_id"]).toBe("string");
      // The handler saw its attempt's span as the active one, after an await.
      expect(seenInHandler[index]).toEqual({ spanId: attempt.spanContext().spanId, traceId: attempt.spanContext().traceId });
    }
    const [failed, second] = attempts;
    expect(failed!.status.code).toBe(SpanStatusCode.ERROR);
    expect(failed!.attributes["conveyor.outcome"]).toBe("failed");
    expect(failed!.events.map((event) => event.name)).toEqual(["exception"]);
    expect(failed!.events[0]!.attributes?.["exception.message"]).toBe("first attempt fails");
    expect(second!.status.code).toBe(SpanStatusCode.UNSET);
    expect(second!.attributes["conveyor.outcome"]).toBe("succeeded");
    // The handler's own spans are children of its attempt's span.
    const steps = spans("handler.step");
    expect(steps.map(parentOf).sort()).toEqual(attempts.map((attempt) => attempt.spanContext().spanId).sort());
  });

  it("records an attempt a reclaim sweep ended as lease_expired, in a span linked to the enqueue", async () => {
    const { id } = await test.conveyor.enqueue(waiting, {});
    const owner = test.conveyor.worker({ id: "owner", pollIntervalMs: 20, logger: silent });
    const sweeper = test.conveyor.worker({ id: "sweeper", logger: silent });
    await owner.start();
    try {
      await waitFor("the job running", async () => (await test.conveyor.getJob(id))?.status === "running");
      // As if the owner had paused past its lease: expire it, and sweep.
      await waitFor("the lease reclaimed", async () => {
        await test.conveyor.pool.query(`UPDATE "${test.conveyor.options.schema}".jobs SET lease_expires_at = now() - interval '1 second' WHERE id = $1`, [id]);
        return (await sweeper.reclaimExpired()) === 1;
      });
    } finally {
      await owner.stop({ graceMs: 0 });
    }
    const [producer] = spans("send tracing").filter((span) => span.attributes["messaging.message.id"] === id);
    const expired = spans("process tracing").filter((span) => span.attributes["conveyor.outcome"] === "lease_expired");
    expect(expired).toHaveLength(1);
    expect(expired[0]!.attributes).toMatchObject({ "messaging.message.id": id, "conveyor.job.attempt": 1, "conveyor.worker_id": "sweeper" });
    expect(expired[0]!.status.code).toBe(SpanStatusCode.ERROR);
    expect(expired[0]!.links.map((link) => link.context.spanId)).toEqual([producer!.spanContext().spanId]);
  });

  it("carries the context on every insert path: batch, COPY, unique, idempotent, chunked", async () => {
    const batch = await test.conveyor.enqueueMany([1, 2, 3].map((n) => ({ job: traced, payload: { n } })));
    const copied = await test.conveyor.enqueueMany(Array.from({ length: COPY_MIN_ROWS }, (_, n) => ({ job: traced, payload: { n } })));
    const unique = await test.conveyor.enqueue(traced, { n: 7 }, { unique: { key: "one" } });
    const keyed = await test.conveyor.enqueue(traced, { n: 8 }, { idempotencyKey: "k-8" });
    const keyedBatch = await test.conveyor.enqueueMany([9, 10].map((n) => ({ job: traced, payload: { n }, idempotencyKey: `k-${n}` })));
    // More than one statement's rows, in the caller's transaction: the chunked strategy.
    const client = await test.conveyor.pool.connect();
    let chunked;
    try {
      await client.query("BEGIN");
      chunked = await test.conveyor.enqueueMany(
        Array.from({ length: ENQUEUE_CHUNK_ROWS + 1 }, (_, n) => ({ job: traced, payload: { n } })),
        { tx: client },
      );
      await client.query("COMMIT");
    } finally {
      client.release();
    }
    const producers = spans("send tracing");
    expect(producers).toHaveLength(6);
    const [batchSpan, copySpan, uniqueSpan, keyedSpan, keyedBatchSpan, chunkedSpan] = producers;
    expect(batchSpan!.attributes["messaging.batch.message_count"]).toBe(3);
    expect(copySpan!.attributes["messaging.batch.message_count"]).toBe(COPY_MIN_ROWS);
    const expectStored = async (ids: string[], span: ReadableSpan) => {
      for (const id of ids) expect(await storedTraceContext(test.conveyor, id)).toEqual({ traceparent: traceparentOf(span) });
    };
    await expectStored(batch.map((job) => job.id), batchSpan!);
    await expectStored([copied[0]!.id, copied.at(-1)!.id], copySpan!);
    await expectStored([unique.id], uniqueSpan!);
    await expectStored([keyed.id], keyedSpan!);
    await expectStored(keyedBatch.map((job) => job.id), keyedBatchSpan!);
    await expectStored([chunked[0]!.id, chunked.at(-1)!.id], chunkedSpan!);
  });

  it("stores a trace context given explicitly, tracestate included, as the PRODUCER span's parent", async () => {
    const traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    const job = await test.conveyor.enqueue(traced, { n: 3 }, { traceContext: { traceparent, tracestate: "vendor=abc" } });
    const [producer] = spans("send tracing");
    expect(producer!.spanContext().traceId).toBe("0af7651916cd43dd8448eb211c80319c");
    expect(parentOf(producer!)).toBe("b7ad6b7169203331");
    expect(await storedTraceContext(test.conveyor, job.id)).toEqual({ traceparent: traceparentOf(producer!), tracestate: "vendor=abc" });
    await expect(test.conveyor.enqueue(traced, { n: 4 }, { traceContext: { traceparent: "nonsense" } })).rejects.toThrow(/traceContext.traceparent/);
  });
});

describe("the package's declarations", () => {
  it("never import @opentelemetry/api, so they compile for users without it", async () => {
    const { readdirSync, readFileSync } = await import("node:fs");
    const { join } = await import("node:path");
    const { requireBuild } = await import("./helpers/child-process.js");
    const root = join(requireBuild("src/index.d.ts"), "..");
    const files = (readdirSync(root, { recursive: true }) as string[]).filter((file) => file.endsWith(".d.ts"));
    expect(files.length).toBeGreaterThan(50);
    const importing = files.filter((file) => /from\s+["']@opentelemetry\//.test(readFileSync(join(root, file), "utf8")));
    expect(importing).toEqual([]);
  });
});

describe("tracing: false", () => {
  let test: TestConveyor;
  beforeAll(async () => {
    test = await createTestConveyor({ jobs: [traced], logger: silent, tracing: false });
  });
  afterAll(() => test.cleanup());

  it("makes no spans, and still stores a context given explicitly", async () => {
    const traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    const plain = await test.conveyor.enqueue(traced, { n: 1 });
    const given = await test.conveyor.enqueue(traced, { n: 2 }, { traceContext: { traceparent } });
    await runUntilDone(test.conveyor, [plain.id, given.id]);
    expect(spans().filter((span) => span.instrumentationScope.name === "conveyor-jobs")).toEqual([]);
    expect(await storedTraceContext(test.conveyor, plain.id)).toBeNull();
    expect(await storedTraceContext(test.conveyor, given.id)).toEqual({ traceparent });
  });
});

describe("one trace from an HTTP enqueue through a retry to success (attempts as children)", () => {
  let api: ApiTest;
  const options: Partial<ConveyorOptions> = { jobs: [traced], tracing: { attempts: "child" } };
  beforeAll(async () => {
    api = await createApiTest({}, options);
  });
  afterAll(() => api.cleanup());

  it("continues the caller's traceparent: PRODUCER under it, each attempt under the PRODUCER", async () => {
    const callerTrace = "4bf92f3577b34da6a3ce929d0e0e4736";
    const callerSpan = "00f067aa0ba902b7";
    const response = await call(api.app, {
      method: "POST",
      url: "/v1/jobs",
      key: api.keys.acme,
      body: { kind: "traced.work", payload: { n: 5, failOnce: true } },
      headers: { traceparent: `00-${callerTrace}-${callerSpan}-01`, tracestate: "congo=t61rcWkgMzE" },
    });
    expect(response.statusCode, response.body).toBe(201);
    const id = response.json.id as string;
    await runUntilDone(api.conveyor, [id]);
    const [producer] = spans("send tracing");
    const attempts = spans("process tracing");
    expect(attempts).toHaveLength(2);
    expect(producer!.attributes["conveyor.tenant"]).toBe("acme");
    expect(parentOf(producer!)).toBe(callerSpan);
    for (const span of [producer!, ...attempts, ...spans("handler.step")]) expect(span.spanContext().traceId).toBe(callerTrace);
    for (const attempt of attempts) {
      expect(parentOf(attempt)).toBe(producer!.spanContext().spanId);
      expect(attempt.links).toEqual([]);
    }
    expect(attempts.map((span) => span.attributes["conveyor.outcome"]).sort()).toEqual(["failed", "succeeded"]);
    expect(producer!.spanContext().traceState?.get("congo")).toBe("t61rcWkgMzE");
  });

  it("ignores an invalid traceparent header, as the W3C spec says", async () => {
    const response = await call(api.app, {
      method: "POST",
      url: "/v1/jobs",
      key: api.keys.acme,
      body: { kind: "traced.work", payload: { n: 6 } },
      headers: { traceparent: "00-00000000000000000000000000000000-00f067aa0ba902b7-01" },
    });
    expect(response.statusCode).toBe(201);
    const [producer] = spans("send tracing");
    expect(producer!.parentSpanContext).toBeUndefined();
  });
});

describe("cron ticks", () => {
  let test: TestConveyor;
  const ticked = defineJob({ kind: "traced.tick", queue: "tracing", schema: z.object({}), cron: "* * * * * *", handler: async () => {} });
  beforeAll(async () => {
    test = await createTestConveyor({ jobs: [ticked], logger: silent });
  });
  afterAll(() => test.cleanup());

  it("start a trace of their own: no stored context, an attempt span with no parent and no links", async () => {
    const worker = test.conveyor.worker({ pollIntervalMs: 20, logger: silent });
    await worker.start();
    try {
      await waitFor("a tick's attempt span", () => spans("process tracing").length > 0);
    } finally {
      await worker.stop();
    }
    const [attempt] = spans("process tracing");
    expect(attempt!.parentSpanContext).toBeUndefined();
    expect(attempt!.links).toEqual([]);
    expect(await storedTraceContext(test.conveyor, String(attempt!.attributes["messaging.message.id"]))).toBeNull();
  });
});
