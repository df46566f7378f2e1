import { describe, expect, it } from "vitest";
import { z } from "zod";
import { defineJob } from "../core/define-job.js";
import { PermanentError, retryAfter } from "../core/errors.js";
import { runBatchHandler } from "./run-batch-handler.js";
import { runHandler } from "./run-handler.js";

const notify = defineJob({
  kind: "test.notify",
  schema: z.object({ to: z.string() }),
  maxAttempts: 2,
  batch: { maxSize: 10 },
  batchHandler: ({ jobs }) =>
    jobs.map((job) => {
      if (job.payload.to === "gone") return new PermanentError("gone");
      if (job.payload.to === "busy") return retryAfter(1_000);
      if (job.payload.to === "flaky") return new Error("flaky");
      return { to: job.payload.to };
    }),
});

describe("runBatchHandler", () => {
  it("decides each job's outcome as a worker would", async () => {
    const results = await runBatchHandler(notify, [{ to: "a" }, { to: "gone" }, { to: "busy" }, { to: "flaky" }]);
    expect(results.map((r) => [r.outcome, r.nextStatus])).toEqual([
      ["succeeded", "succeeded"],
      ["failed", "dead"],
      ["retry_after", "retrying"],
      ["failed", "retrying"],
    ]);
    expect(results[0]!.value).toEqual({ to: "a" });
    expect(results[2]!.delayMs).toBe(1_000);
    // On the last attempt a retryable error dead-letters the job.
    const last = await runBatchHandler(notify, [{ to: "flaky" }], { attempt: 2 });
    expect(last[0]!.nextStatus).toBe("dead");
  });

  it("fails every job when the handler throws or returns the wrong number of outcomes, and validates payloads", async () => {
    const throwing = defineJob({ kind: "test.throwing", schema: z.object({}), batch: { maxSize: 2 }, batchHandler: () => Promise.reject(new Error("down")) });
    expect((await runBatchHandler(throwing, [{}, {}])).map((r) => (r.error as Error).message)).toEqual(["down", "down"]);
    const short = defineJob({ kind: "test.short", schema: z.object({}), batch: { maxSize: 2 }, batchHandler: () => [] });
    expect((await runBatchHandler(short, [{}])).map((r) => (r.error as Error).name)).toEqual(["TypeError"]);
    await expect(runBatchHandler(notify, [{ to: 1 } as never])).rejects.toThrow(/to/);
  });

  it("runs a batch of one through runHandler", async () => {
    expect(await runHandler(notify, { to: "a" })).toMatchObject({ outcome: "succeeded", value: { to: "a" } });
    expect(await runHandler(notify, { to: "gone" })).toMatchObject({ outcome: "failed", nextStatus: "dead" });
  });

  it("refuses a definition without batch options, and both handler kinds at once", () => {
    expect(() => defineJob({ kind: "x", schema: z.object({}), batch: { maxSize: 0 }, batchHandler: () => [] })).toThrow(/maxSize must be an integer from 1 to 1000/);
    expect(() => defineJob({ kind: "x", schema: z.object({}), handler: () => {}, batchHandler: () => [] } as never)).toThrow(/batchHandler needs batch/);
  });
});
