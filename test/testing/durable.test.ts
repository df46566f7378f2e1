/**
 * The test Conveyor with durable jobs, against real PostgreSQL: drain()
 * wakes sleepers whose time has come and runs jobs woken by sendEvent;
 * advanceTime(ms) brings sleeps, wait deadlines and delayed jobs closer
 * without touching a clock, so a 3-day sleep or a 7-day timeout ends in a
 * test. "Nothing ran" is read from a drain that returned, never after a
 * fixed pause.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { MAX_DELAY_MS } from "../../packages/core/src/core/defaults.js";
import { defineJob } from "../../packages/core/src/core/define-job.js";
import { ValidationError } from "../../packages/core/src/core/errors.js";
import { createTestConveyor, DRAIN_SLEEP_HORIZON_MS, type TestConveyor } from "../../packages/core/src/testing/index.js";
import { testDatabaseUrl } from "../helpers/database.js";

const DAY = 86_400_000;

/** How many times each job's step functions ran, by `<job id>:<step>`. */
const calls = new Map<string, number>();
const counted = <T>(jobId: string, step: string, value: T): T => {
  calls.set(`${jobId}:${step}`, (calls.get(`${jobId}:${step}`) ?? 0) + 1);
  return value;
};

const trial = defineJob({
  kind: "durable.trial",
  schema: z.object({ sleepMs: z.number() }),
  handler: async ({ payload, job, step, sleep }) => {
    const account = await step("create-account", () => counted(job.id, "create-account", { id: job.id.slice(0, 8) }));
    await sleep("trial-period", payload.sleepMs);
    await step("downgrade", () => counted(job.id, "downgrade", "free"));
    return { account: account.id };
  },
});

const payment = defineJob({
  kind: "durable.payment",
  schema: z.object({ account: z.string(), timeoutMs: z.number().optional() }),
  handler: async ({ payload, waitForEvent }) => {
    const paid = await waitForEvent<{ plan: string }>("payment", { event: "invoice.paid", key: payload.account, timeoutMs: payload.timeoutMs });
    return { paid };
  },
});

/** Sends the event a payment job waits for, from a handler: the drain runs the job it wakes. */
const webhook = defineJob({
  kind: "durable.webhook",
  schema: z.object({ account: z.string() }),
  handler: async ({ payload }) => (await t.conveyor.sendEvent({ event: "invoice.paid", key: payload.account, payload: { plan: "webhook" } })).jobIds,
});

const reminder = defineJob({ kind: "durable.reminder", schema: z.object({}), handler: () => "reminded" });

let t: TestConveyor;
beforeAll(async () => {
  t = await createTestConveyor({ jobs: [trial, payment, webhook, reminder], connectionString: testDatabaseUrl() });
});
afterAll(() => t?.close());

const statusOf = async (id: string) => (await t.conveyor.getJob(id))!.status;

describe("drain() with durable jobs", () => {
  it("wakes a job whose sleep ends within the drain and runs it to its end", async () => {
    const { id } = await t.conveyor.enqueue(trial, { sleepMs: 50 });
    const { jobs, attempts } = await t.drain();
    expect(jobs.find((job) => job.id === id)).toMatchObject({ status: "succeeded", attempts: 1, result: { account: id.slice(0, 8) } });
    expect(attempts.filter((attempt) => attempt.jobId === id).map((attempt) => attempt.outcome)).toEqual(["suspended", "succeeded"]);
    expect(calls.get(`${id}:create-account`)).toBe(1);
    expect((await t.conveyor.steps.list(id)).map((record) => [record.name, record.state])).toEqual([
      ["create-account", "completed"],
      ["trial-period", "awake"],
      ["downgrade", "completed"],
    ]);
  });

  it("returns null from a wait whose deadline comes within the drain", async () => {
    const { id } = await t.conveyor.enqueue(payment, { account: "acct_short", timeoutMs: 50 });
    expect((await t.drain()).jobs.find((job) => job.id === id)).toMatchObject({ status: "succeeded", result: { paid: null } });
  });

  it("leaves a longer sleep sleeping, and runs nothing more until its time comes", async () => {
    const { id } = await t.conveyor.enqueue(trial, { sleepMs: DRAIN_SLEEP_HORIZON_MS + 60_000 });
    expect((await t.drain()).jobs.find((job) => job.id === id)).toMatchObject({ status: "sleeping" });
    expect((await t.drain()).jobs).toEqual([]);
    expect(await statusOf(id)).toBe("sleeping");
    await t.conveyor.cancel(id);
  });

  it("runs a job woken by sendEvent, and one woken by an event another job of the same drain sends", async () => {
    const { id } = await t.conveyor.enqueue(payment, { account: "acct_1" });
    expect((await t.drain()).jobs.find((job) => job.id === id)).toMatchObject({ status: "sleeping" });
    expect(await t.conveyor.sendEvent({ event: "invoice.paid", key: "acct_1", payload: { plan: "pro" } })).toMatchObject({ jobIds: [id] });
    expect((await t.drain()).jobs.find((job) => job.id === id)).toMatchObject({ status: "succeeded", result: { paid: { plan: "pro" } } });

    // An event sent before the job reaches its wait is received when it gets there.
    const early = await t.conveyor.enqueue(payment, { account: "acct_2" });
    expect(await t.conveyor.sendEvent({ event: "invoice.paid", key: "acct_2", payload: { plan: "early" } })).toMatchObject({ jobIds: [] });
    expect((await t.drain()).jobs.find((job) => job.id === early.id)).toMatchObject({ status: "succeeded", result: { paid: { plan: "early" } } });

    const waiting = await t.conveyor.enqueue(payment, { account: "acct_3" });
    await t.drain();
    const sender = await t.conveyor.enqueue(webhook, { account: "acct_3" });
    const { jobs } = await t.drain();
    expect(jobs.find((job) => job.id === sender.id)).toMatchObject({ status: "succeeded", result: [waiting.id] });
    expect(jobs.find((job) => job.id === waiting.id)).toMatchObject({ status: "succeeded", result: { paid: { plan: "webhook" } } });
  });
});

describe("advanceTime(ms)", () => {
  it("ends a 3-day sleep: the job finishes at the next drain, its steps run once", async () => {
    const { id } = await t.conveyor.enqueue(trial, { sleepMs: 3 * DAY });
    expect((await t.drain()).jobs.find((job) => job.id === id)).toMatchObject({ status: "sleeping" });
    const [, asleep] = await t.conveyor.steps.list(id);

    expect(await t.advanceTime(2 * DAY)).toBeGreaterThanOrEqual(1);
    const [, closer] = await t.conveyor.steps.list(id);
    expect(asleep!.wakeAt!.getTime() - closer!.wakeAt!.getTime()).toBe(2 * DAY);
    expect((await t.conveyor.getJob(id))!.runAt).toEqual(closer!.wakeAt);
    expect((await t.drain()).jobs).toEqual([]); // a day is left
    expect(await statusOf(id)).toBe("sleeping");

    await t.advanceTime(DAY);
    expect((await t.drain()).jobs.find((job) => job.id === id)).toMatchObject({ status: "succeeded", result: { account: id.slice(0, 8) } });
    expect(calls.get(`${id}:create-account`)).toBe(1);
    expect(calls.get(`${id}:downgrade`)).toBe(1);
  });

  it("passes a 7-day wait's deadline: the wait returns null", async () => {
    const { id } = await t.conveyor.enqueue(payment, { account: "acct_7d", timeoutMs: 7 * DAY });
    await t.drain();
    await t.advanceTime(6 * DAY);
    expect((await t.drain()).jobs).toEqual([]);
    expect(await statusOf(id)).toBe("sleeping");
    await t.advanceTime(DAY);
    expect((await t.drain()).jobs.find((job) => job.id === id)).toMatchObject({ status: "succeeded", result: { paid: null } });
    const [wait] = await t.conveyor.steps.list(id);
    expect(wait).toMatchObject({ name: "payment", state: "timed_out" });
  });

  it("brings delayed jobs closer too, and leaves a wait without a deadline waiting", async () => {
    const later = await t.conveyor.enqueue(reminder, {}, { delayMs: 3_600_000 });
    const { id } = await t.conveyor.enqueue(payment, { account: "acct_forever" });
    expect((await t.drain()).jobs.map((job) => job.id)).toEqual([id]);
    expect(await statusOf(later.id)).toBe("queued");

    await t.advanceTime(MAX_DELAY_MS);
    const { jobs } = await t.drain();
    expect(jobs.map((job) => [job.id, job.status])).toEqual([[later.id, "succeeded"]]);
    expect(await statusOf(id)).toBe("sleeping");
    const [wait] = await t.conveyor.steps.list(id);
    expect(wait).toMatchObject({ state: "awaiting", wakeAt: null });
    await t.conveyor.cancel(id);
  });

  it("refuses a duration that is not 0 to MAX_DELAY_MS", async () => {
    for (const ms of [-1, Number.NaN, MAX_DELAY_MS + 1]) await expect(t.advanceTime(ms)).rejects.toBeInstanceOf(ValidationError);
    expect(await t.advanceTime(0)).toBe(0);
  });
});
