import { context, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { BasicTracerProvider, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { afterAll, beforeAll, expect, it } from "vitest";
import { z } from "zod";
import { defineJob } from "../packages/core/src/core/define-job.js";
import { JsonLinesProcess } from "./helpers/child-process.js";
import { createTestConveyor, type TestConveyor } from "./helpers/database.js";
import { silent } from "./worker/support.js";
import { waitFor } from "./helpers/wait-for.js";

// End to end: spans exported over OTLP/HTTP (JSON) to a receiver process.

interface OtlpSpan {
  name: string;
  kind: number;
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  links?: Array<{ traceId: string; spanId: string }>;
  attributes: Array<{ key: string; value: Record<string, unknown> }>;
}

const job = defineJob({ kind: "otlp.job", queue: "otlp", schema: z.object({ n: z.number() }), handler: async ({ payload }) => payload.n * 2 });

let receiver: JsonLinesProcess;
let provider: BasicTracerProvider;
let test: TestConveyor;
const received: OtlpSpan[] = [];

beforeAll(async () => {
  receiver = new JsonLinesProcess("test/fixtures/otlp-receiver.mjs", []);
  const { port } = await receiver.next<{ port: number }>();
  provider = new BasicTracerProvider({
    spanProcessors: [new SimpleSpanProcessor(new OTLPTraceExporter({ url: `http://127.0.0.1:${port}/v1/traces` }))],
  });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  trace.setGlobalTracerProvider(provider);
  test = await createTestConveyor({ jobs: [job], logger: silent });
});

afterAll(async () => {
  await test?.cleanup();
  await provider?.shutdown();
  trace.disable();
  context.disable();
  if (receiver) {
    process.kill(receiver.pid, "SIGTERM");
    await receiver.exited;
  }
});

/** Read the receiver's lines until `done` holds for the spans received so far. */
async function receiveUntil(done: (spans: OtlpSpan[]) => boolean): Promise<void> {
  while (!done(received)) {
    const request = await receiver.next<{ path: string; contentType: string; body: string }>(10_000);
    expect(request.path).toBe("/v1/traces");
    expect(request.contentType).toMatch(/^application\/json/);
    const { resourceSpans } = JSON.parse(request.body) as { resourceSpans: Array<{ scopeSpans: Array<{ spans: OtlpSpan[] }> }> };
    for (const resource of resourceSpans) for (const scope of resource.scopeSpans) received.push(...scope.spans);
  }
}

it("exports the PRODUCER and CONSUMER spans of an enqueue and its attempt over OTLP/HTTP", async () => {
  const enqueued = await test.conveyor.enqueue(job, { n: 21 });
  const worker = test.conveyor.worker({ pollIntervalMs: 20, logger: silent });
  await worker.start();
  try {
    await waitFor("the job to succeed", async () => (await test.conveyor.getJob(enqueued.id))?.status === "succeeded");
  } finally {
    await worker.stop();
  }
  await provider.forceFlush();
  await receiveUntil((spans) => spans.some((span) => span.name === "process otlp"));
  const producer = received.find((span) => span.name === "send otlp")!;
  const consumer = received.find((span) => span.name === "process otlp")!;
  expect(producer.kind).toBe(4); // SPAN_KIND_PRODUCER
  expect(consumer.kind).toBe(5); // SPAN_KIND_CONSUMER
  expect(consumer.links).toEqual([expect.objectContaining({ traceId: producer.traceId, spanId: producer.spanId })]);
  const attribute = (span: OtlpSpan, key: string) => span.attributes.find((entry) => entry.key === key)?.value;
  expect(attribute(consumer, "messaging.message.id")).toEqual({ stringValue: enqueued.id });
  expect(attribute(consumer, "messaging.destination.name")).toEqual({ stringValue: "otlp" });
  expect(attribute(consumer, "conveyor.outcome")).toEqual({ stringValue: "succeeded" });
});
