/**
 * A span per durable step, sleep and wait: a child of the attempt's span,
 * named `<kind> <name>`, ended with what happened (completed, replayed,
 * suspended, received), and a failed step's span marked an error.
 */
import { context, SpanStatusCode, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { BasicTracerProvider, InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { defineJob } from "../../packages/core/src/index.js";
import { createTestConveyor, type TestConveyor } from "../helpers/database.js";
import { silent } from "../worker/support.js";

const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const contextManager = new AsyncLocalStorageContextManager().enable();

const failedOnce = new Set<string>();
const durable = defineJob({
  kind: "traced.durable",
  queue: "traced-durable",
  schema: z.object({}),
  backoff: { baseMs: 1, capMs: 1, jitter: 0 },
  async handler({ job, step, sleep, waitForEvent }) {
    await step("one", () => 1);
    await step("flaky", () => {
      if (!failedOnce.has(job.id)) {
        failedOnce.add(job.id);
        throw new Error("flaky fails once");
      }
      return 2;
    });
    await sleep("nap", 20);
    return waitForEvent("go", { event: "traced.go", key: job.id });
  },
});

let t: TestConveyor;
beforeAll(async () => {
  context.setGlobalContextManager(contextManager);
  trace.setGlobalTracerProvider(provider);
  t = await createTestConveyor({ jobs: [durable], logger: silent });
});
afterAll(async () => {
  await t?.cleanup();
  await provider.shutdown();
  trace.disable();
  context.disable();
});

const named = (name: string): ReadableSpan[] => exporter.getFinishedSpans().filter((span) => span.name === name);
const outcomes = (name: string) => named(name).map((span) => span.attributes["conveyor.outcome"]);

describe("durable steps in traces", () => {
  it("gives each step, sleep and wait a span under its attempt's, ended with its outcome", async () => {
    const worker = t.conveyor.worker({ concurrency: 2, pollIntervalMs: 20, wakeIntervalMs: 20 });
    await worker.start();
    try {
      const { id } = await t.conveyor.enqueue(durable, {});
      // Four runs: one completed, flaky fails; one replayed, flaky completed, nap suspends; woken by
      // the waker: all replayed, go suspends; woken by the event: all replayed, go's received record too.
      const { waitFor } = await import("../helpers/wait-for.js");
      await waitFor("the job to wait for its event", async () => outcomes("wait go").includes("suspended"), 10_000);
      await t.conveyor.sendEvent({ event: "traced.go", key: id, payload: "ok" });
      const job = await t.conveyor.waitFor(id, { timeoutMs: 10_000 });
      expect(job.result).toBe("ok");
    } finally {
      await worker.stop();
    }
    expect(outcomes("step one")).toEqual(["completed", "replayed", "replayed", "replayed"]);
    expect(outcomes("step flaky")).toEqual(["failed", "completed", "replayed", "replayed"]);
    expect(outcomes("sleep nap")).toEqual(["suspended", "replayed", "replayed"]);
    // Received by sendEvent's delivery: the run it woke returns the record.
    expect(outcomes("wait go")).toEqual(["suspended", "replayed"]);
    const [failed] = named("step flaky");
    expect(failed!.status.code).toBe(SpanStatusCode.ERROR);
    // Each step span is a child of an attempt span of the same trace.
    const attempts = new Map(exporter.getFinishedSpans().filter((span) => span.name === "process traced-durable").map((span) => [span.spanContext().spanId, span]));
    expect(attempts.size).toBe(4);
    for (const span of [...named("step one"), ...named("step flaky"), ...named("sleep nap"), ...named("wait go")]) {
      const parent = attempts.get(span.parentSpanContext?.spanId ?? "");
      expect(parent, span.name).toBeDefined();
      expect(span.spanContext().traceId).toBe(parent!.spanContext().traceId);
      expect(span.attributes["conveyor.step.name"]).toBe(span.name.split(" ")[1]);
    }
  });
});
