import { describe, expect, it } from "vitest";
import { z } from "zod";
import { defineJob } from "../core/define-job.js";
import { PermanentError, retryAfter, ValidationError } from "../core/errors.js";
import { JobCancelledError, JobTimeoutError, LeaseLostError } from "../worker/abort-reasons.js";
import { runHandler, startHandler } from "./run-handler.js";

const echo = defineJob({
  kind: "test.echo",
  schema: z.object({ text: z.string().trim(), fail: z.enum(["no", "error", "permanent", "retry"]).default("no") }),
  maxAttempts: 3,
  backoff: { baseMs: 1_000, capMs: 1_000, jitter: 0 },
  async handler({ payload, job, log, progress, heartbeat }) {
    log.info({ text: payload.text }, "echoing");
    await progress({ step: 1 });
    await heartbeat();
    if (payload.fail === "error") throw new Error("boom");
    if (payload.fail === "permanent") throw new PermanentError("never");
    if (payload.fail === "retry") return retryAfter(5_000);
    return { text: payload.text, attempt: job.attempt };
  },
});

/** Waits for its signal, then throws its reason (or returns, if told to finish anyway). */
const waits = defineJob({
  kind: "test.waits",
  schema: z.object({ finishAnyway: z.boolean().default(false) }),
  timeoutMs: 0,
  async handler({ payload, signal, progress }) {
    if (!signal.aborted) await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
    if (payload.finishAnyway) return "finished";
    expect(await progress("after abort")).toBe(signal.reason instanceof LeaseLostError ? false : true);
    throw signal.reason;
  },
});

describe("runHandler", () => {
  it("runs the handler with the parsed payload and records what it did", async () => {
    const result = await runHandler(echo, { text: "  hi  " }, { attempt: 2 });
    expect(result).toMatchObject({ outcome: "succeeded", nextStatus: "succeeded", value: { text: "hi", attempt: 2 }, progress: [{ step: 1 }], heartbeats: 1 });
    expect(result.logs).toEqual([expect.objectContaining({ level: 30, msg: "echoing", text: "hi", kind: "test.echo", attempt: 2 })]);
  });

  it("says what the worker would do next: retry with backoff, dead at the last attempt or on PermanentError, retry after", async () => {
    expect(await runHandler(echo, { text: "x", fail: "error" })).toMatchObject({ outcome: "failed", nextStatus: "retrying", delayMs: 1_000 });
    expect(await runHandler(echo, { text: "x", fail: "error" }, { attempt: 3 })).toMatchObject({ outcome: "failed", nextStatus: "dead" });
    const permanent = await runHandler(echo, { text: "x", fail: "permanent" });
    expect(permanent).toMatchObject({ outcome: "failed", nextStatus: "dead" });
    expect(permanent.error).toBeInstanceOf(PermanentError);
    expect(await runHandler(echo, { text: "x", fail: "retry" })).toMatchObject({ outcome: "retry_after", nextStatus: "retrying", delayMs: 5_000 });
  });

  it("refuses a payload the schema refuses, unless told not to validate", async () => {
    await expect(runHandler(echo, { text: 5 } as never)).rejects.toBeInstanceOf(ValidationError);
    expect((await runHandler(echo, { text: "raw  " }, { validate: false })).value).toEqual({ text: "raw  ", attempt: 1 });
  });

  it("ctx.transaction needs options.tx, and runs work on it", async () => {
    const inTransaction = defineJob({ kind: "test.tx", schema: z.object({}), handler: ({ transaction }) => transaction(async (tx) => (await tx.query("SELECT 1")).rows) });
    const refused = await runHandler(inTransaction, {});
    expect(refused.outcome).toBe("failed");
    expect(String(refused.error)).toMatch(/options\.tx/);
    const tx = { query: async () => ({ rows: [{ one: 1 }], rowCount: 1 }) };
    expect(await runHandler(inTransaction, {}, { tx })).toMatchObject({ outcome: "succeeded", value: [{ one: 1 }], transactions: 1 });
  });
});

describe("startHandler: cancel, timeout, lost lease, shutdown", () => {
  it("cancel aborts the signal with JobCancelledError; a handler that throws ends cancelled", async () => {
    const run = startHandler(waits, {});
    run.cancel();
    const result = await run.result;
    expect(result).toMatchObject({ outcome: "cancelled", nextStatus: "cancelled", progress: ["after abort"] });
    expect(result.error).toBeInstanceOf(JobCancelledError);
    expect(run.signal.reason).toBeInstanceOf(JobCancelledError);
  });

  it("a cancelled handler that finishes anyway succeeds, as in a worker", async () => {
    const run = startHandler(waits, { finishAnyway: true });
    run.cancel();
    expect(await run.result).toMatchObject({ outcome: "succeeded", value: "finished" });
  });

  it("timeout and lost lease end the attempt without waiting for the handler", async () => {
    const timedOut = startHandler(waits, {});
    timedOut.timeout();
    const timeout = await timedOut.result;
    expect(timeout).toMatchObject({ outcome: "timeout", nextStatus: "retrying" });
    expect(timeout.error).toBeInstanceOf(JobTimeoutError);
    const lost = startHandler(waits, {});
    lost.loseLease();
    expect(await lost.result).toMatchObject({ outcome: "lease_lost", nextStatus: null });
    const stopped = startHandler(waits, {});
    stopped.shutdown();
    expect(await stopped.result).toMatchObject({ outcome: "interrupted", nextStatus: "queued" });
  });

  it("the definition's timeoutMs applies", async () => {
    const slow = defineJob({ kind: "test.slow", schema: z.object({}), timeoutMs: 20, handler: () => new Promise(() => {}) });
    expect((await runHandler(slow, {})).outcome).toBe("timeout");
  });
});
