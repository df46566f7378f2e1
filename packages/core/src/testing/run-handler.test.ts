import { describe, expect, it } from "vitest";
import { z } from "zod";
import { defineJob } from "../core/define-job.js";
import { JobSuspendedError, PermanentError, retryAfter, StepError, ValidationError } from "../core/errors.js";
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

const DAY = 86_400_000;

/** A durable handler: what it does is chosen by the payload, what ran is pushed to `ran`. */
const ran: string[] = [];
const durable = defineJob({
  kind: "test.durable",
  schema: z.object({
    waitTimeoutMs: z.number().optional(),
    waits: z.number().default(1),
    reuseName: z.boolean().default(false),
  }),
  async handler({ payload, step, sleep, waitForEvent }) {
    const account = await step("create-account", () => {
      ran.push("create-account");
      return { id: "acct_1", createdAt: new Date(0) };
    });
    await sleep("trial-period", 3 * DAY);
    ran.push("after sleep");
    if (payload.reuseName) await step("create-account", () => ran.push("again"));
    const paid: unknown[] = [];
    for (let n = 1; n <= payload.waits; n += 1) {
      paid.push(await waitForEvent(`payment-${n}`, { event: "invoice.paid", key: account.id, timeoutMs: payload.waitTimeoutMs }));
    }
    ran.push("end");
    return { account, paid };
  },
});

describe("runHandler with steps, sleeps and waits, in memory", () => {
  it("runs a step and records its result through JSON, or replays options.steps without calling it", async () => {
    ran.length = 0;
    const first = await runHandler(durable, { waitTimeoutMs: DAY });
    expect(first).toMatchObject({ outcome: "succeeded", value: { account: { id: "acct_1", createdAt: "1970-01-01T00:00:00.000Z" } } });
    expect(first.steps[0]).toEqual({ name: "create-account", kind: "step", state: "completed", result: { id: "acct_1", createdAt: "1970-01-01T00:00:00.000Z" } });
    expect(ran).toEqual(["create-account", "after sleep", "end"]);

    ran.length = 0;
    const replayed = await runHandler(durable, { waitTimeoutMs: DAY }, { steps: { "create-account": { id: "acct_9" } } });
    expect(replayed.value).toMatchObject({ account: { id: "acct_9" } });
    expect(replayed.steps[0]).toEqual({ name: "create-account", kind: "step", state: "replayed", result: { id: "acct_9" } });
    expect(ran).toEqual(["after sleep", "end"]);
  });

  it("records a sleep and returns from it at once", async () => {
    const result = await runHandler(durable, { waitTimeoutMs: DAY });
    expect(result.steps[1]).toEqual({ name: "trial-period", kind: "sleep", state: "awake", duration: 3 * DAY });
    expect(result.outcome).toBe("succeeded");
  });

  it("hands a wait the first matching event of options.events, each event once, and null after a timeout", async () => {
    const events = [
      { event: "invoice.paid", key: "acct_other", payload: { plan: "not this key" } },
      { event: "invoice.refunded", key: "acct_1", payload: { plan: "not this event" } },
      { event: "invoice.paid", key: "acct_1", payload: { plan: "pro" } },
      { event: "invoice.paid", key: "acct_1", payload: { plan: "team" } },
    ];
    const result = await runHandler(durable, { waits: 3, waitTimeoutMs: 7 * DAY }, { events });
    expect(result.value).toMatchObject({ paid: [{ plan: "pro" }, { plan: "team" }, null] });
    expect(result.steps.slice(2)).toEqual([
      { name: "payment-1", kind: "wait", state: "received", result: { plan: "pro" } },
      { name: "payment-2", kind: "wait", state: "received", result: { plan: "team" } },
      { name: "payment-3", kind: "wait", state: "timed_out" },
    ]);
  });

  it("ends the attempt suspended at a wait with no event and no timeout", async () => {
    ran.length = 0;
    const result = await runHandler(durable, {});
    expect(result).toMatchObject({ outcome: "suspended", nextStatus: "sleeping", delayMs: 0, value: undefined });
    expect(result.error).toBeInstanceOf(JobSuspendedError);
    expect(result.steps.at(-1)).toEqual({ name: "payment-1", kind: "wait", state: "awaiting" });
    expect(ran).toEqual(["create-account", "after sleep"]);
  });

  it("fails the job for good with a StepError when a name is used twice", async () => {
    ran.length = 0;
    const result = await runHandler(durable, { reuseName: true, waitTimeoutMs: DAY });
    expect(result).toMatchObject({ outcome: "failed", nextStatus: "dead" });
    expect(result.error).toBeInstanceOf(StepError);
    expect((result.error as Error).message).toContain('"create-account": this name was already used in this run');
    expect(ran).toEqual(["create-account", "after sleep"]);
  });
});
