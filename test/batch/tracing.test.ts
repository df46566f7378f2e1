/**
 * A span per batch: a CONSUMER span `process <queue> batch`, linked to the
 * trace each of its jobs was enqueued in, around the batch handler; each
 * job keeps its own attempt span in its own trace.
 */
import { context, trace } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { defineJob } from "../../packages/core/src/index.js";
import { createTestConveyor, type TestConveyor } from "../helpers/database.js";
import { silent } from "../worker/support.js";

const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const contextManager = new AsyncLocalStorageContextManager().enable();

const activeInHandler: Array<string | undefined> = [];
const notify = defineJob({
  kind: "traced.batch",
  queue: "traced-batch",
  schema: z.object({ n: z.number() }),
  batch: { maxSize: 3, maxWaitMs: 1_000 },
  async batchHandler({ jobs }) {
    activeInHandler.push(trace.getActiveSpan()?.spanContext().spanId);
    return jobs.map((job) => job.payload.n);
  },
});

let t: TestConveyor;
beforeAll(async () => {
  context.setGlobalContextManager(contextManager);
  trace.setGlobalTracerProvider(provider);
  t = await createTestConveyor({ jobs: [notify], logger: silent });
});
afterAll(async () => {
  await t?.cleanup();
  await provider.shutdown();
  trace.disable();
  context.disable();
});

describe("batch handlers in traces", () => {
  it("runs each batch in a span linked to every job's trace, beside each job's attempt span", async () => {
    // Each job enqueued in a trace of its own, as three requests would.
    const enqueued = await Promise.all(
      [1, 2, 3].map((n) =>
        trace.getTracer("app").startActiveSpan(`request ${n}`, async (span) => {
          const job = await t.conveyor.enqueue(notify, { n });
          span.end();
          return { id: job.id, traceId: span.spanContext().traceId };
        }),
      ),
    );
    const worker = t.conveyor.worker({ concurrency: 3, pollIntervalMs: 20 });
    await worker.start();
    try {
      for (const job of enqueued) expect((await t.conveyor.waitFor(job.id, { timeoutMs: 10_000 })).status).toBe("succeeded");
    } finally {
      await worker.stop();
    }
    // Usually one batch of three; the claims may split them (a waitFor marks a job while a claim runs).
    const batches = exporter.getFinishedSpans().filter((span) => span.name === "process traced-batch batch");
    expect(batches.length).toBeGreaterThanOrEqual(1);
    expect(batches.reduce((sum, batch) => sum + Number(batch.attributes["messaging.batch.message_count"]), 0)).toBe(3);
    for (const batch of batches) expect(batch.links).toHaveLength(Number(batch.attributes["messaging.batch.message_count"]));
    const linked = batches.flatMap((batch) => batch.links.map((link) => link.context.traceId));
    expect(linked.sort()).toEqual(enqueued.map((job) => job.traceId).sort());
    expect(activeInHandler.sort()).toEqual(batches.map((batch) => batch.spanContext().spanId).sort());
    // Each job keeps its own attempt span.
    const attempts = exporter.getFinishedSpans().filter((span) => span.name === "process traced-batch");
    expect(attempts.map((span) => span.attributes["messaging.message.id"]).sort()).toEqual(enqueued.map((job) => job.id).sort());
  });
});
