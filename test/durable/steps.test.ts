/**
 * Durable execution through a real worker: a step runs once per job and
 * later runs replay its recorded result; a transactional step's writes and
 * record commit together; a sleep frees the slot and the job runs again at
 * its time; waitForEvent receives an event sent before or after it began
 * waiting, or null after its timeout; names are unique; resume and rerun
 * from a step; cancel of a sleeping job.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { ConflictError, NotFoundError, ValidationError } from "../../packages/core/src/core/errors.js";
import { defineJob } from "../../packages/core/src/index.js";
import type { Worker } from "../../packages/core/src/worker/worker.js";
import { createTestConveyor, type TestConveyor } from "../helpers/database.js";
import { waitFor } from "../helpers/wait-for.js";
import { silent, sql } from "../worker/support.js";

/** How many times each step function ran, by job and step. */
const calls = new Map<string, number>();
const count = (jobId: string, step: string) => calls.set(`${jobId}:${step}`, (calls.get(`${jobId}:${step}`) ?? 0) + 1);
const callsOf = (jobId: string, step: string) => calls.get(`${jobId}:${step}`) ?? 0;
/** Steps seen by later code, by job: what `step` returned in each run. */
const seen = new Map<string, unknown[]>();
/** Jobs whose "flaky" step fails the first time the job runs it. */
const failOnce = new Set<string>();

const workflow = defineJob({
  kind: "durable.workflow",
  schema: z.object({ sleepMs: z.number(), failLater: z.boolean().default(false) }),
  maxAttempts: 5,
  backoff: { baseMs: 10, capMs: 10, jitter: 0 },
  handler: async ({ payload, job, step, sleep }) => {
    const a = await step("a", () => {
      count(job.id, "a");
      return { n: Math.random(), at: "a" };
    });
    seen.set(job.id, [...(seen.get(job.id) ?? []), a]);
    await step("b", async () => {
      count(job.id, "b");
      if (payload.failLater && !failOnce.has(job.id)) {
        failOnce.add(job.id);
        throw new Error("b fails once");
      }
      return "b";
    });
    await sleep("nap", payload.sleepMs);
    const c = await step("c", () => {
      count(job.id, "c");
      return 3;
    });
    return { a, c };
  },
});

const transactional = defineJob({
  kind: "durable.transactional",
  schema: z.object({ table: z.string() }),
  handler: async ({ payload, job, step }) => {
    await step("write", { transaction: true }, async (tx) => {
      count(job.id, "write");
      await tx.query(`INSERT INTO ${payload.table} (job_id) VALUES ($1)`, [job.id]);
      return "written";
    });
    // Fails the first attempt after the transactional step committed: the retry must not write again.
    if (!failOnce.has(job.id)) {
      failOnce.add(job.id);
      throw new Error("fails after the transactional step");
    }
    return "ok";
  },
});

const waiting = defineJob({
  kind: "durable.waiting",
  schema: z.object({ key: z.string(), timeoutMs: z.number().optional() }),
  handler: async ({ payload, waitForEvent }) => {
    const paid = await waitForEvent<{ amount: number }>("paid", { event: "invoice.paid", key: payload.key, timeoutMs: payload.timeoutMs });
    return { paid };
  },
});

const twice = defineJob({
  kind: "durable.twice",
  schema: z.object({}),
  maxAttempts: 3,
  handler: async ({ step }) => {
    await step("same", () => 1);
    await step("same", () => 2);
  },
});

/** Returns the driver's query result from a transactional step, as a hurried handler would: a value holding functions. */
const returnsQueryResult = defineJob({
  kind: "durable.returns-query-result",
  schema: z.object({ table: z.string() }),
  maxAttempts: 3,
  handler: async ({ payload, job, step }) => {
    await step("upgrade", { transaction: true }, (tx) => tx.query(`INSERT INTO ${payload.table} (job_id) VALUES ($1)`, [job.id]));
  },
});

const sleepsUntil = defineJob({
  kind: "durable.sleeps-until",
  schema: z.object({ until: z.string().optional(), ms: z.number().optional() }),
  handler: async ({ payload, sleep }) => {
    await sleep("nap", payload.until === undefined ? payload.ms! : new Date(payload.until));
  },
});

let t: TestConveyor;
let worker: Worker;
const table = `durable_effects_${process.pid}`;

beforeAll(async () => {
  t = await createTestConveyor({ jobs: [workflow, transactional, waiting, twice, sleepsUntil, returnsQueryResult], logger: silent });
  await sql(t.conveyor, `CREATE TABLE IF NOT EXISTS {{schema}}.${table} (job_id uuid NOT NULL)`);
  worker = t.conveyor.worker({ concurrency: 4, pollIntervalMs: 50, wakeIntervalMs: 50, reclaimIntervalMs: 200 });
  await worker.start();
});
afterAll(async () => {
  await worker?.stop();
  await t?.cleanup();
});
beforeEach(() => failOnce.clear());

const ended = (id: string) => t.conveyor.waitFor(id, { timeoutMs: 20_000 });

describe("durable execution", () => {
  it("runs each step once per job, replays its result after a failure and after a sleep, and frees the slot while sleeping", async () => {
    const { id } = await t.conveyor.enqueue(workflow, { sleepMs: 300, failLater: true });
    await waitFor("the job to sleep", async () => (await t.conveyor.getJob(id))?.status === "sleeping", 10_000);
    const asleep = await t.conveyor.getJob(id);
    expect(asleep!.lockedBy).toBeNull();
    const job = await ended(id);
    expect(job.status).toBe("succeeded");
    expect(callsOf(id, "a")).toBe(1);
    expect(callsOf(id, "b")).toBe(2); // failed once, then recorded
    expect(callsOf(id, "c")).toBe(1);
    // Every run saw the one recorded result of "a" (first run, the retry, the wake-up).
    const runs = seen.get(id)!;
    expect(runs.length).toBe(3);
    for (const a of runs) expect(a).toEqual(runs[0]);
    expect((job.result as { a: unknown }).a).toEqual(runs[0]);
    // The attempts: a failure (counted), a suspension (given back), the success.
    expect(job.executions.map((e) => e.outcome)).toEqual(["failed", "suspended", "succeeded"]);
    expect(job.attempts).toBe(2);
    const steps = await t.conveyor.steps.list(id);
    expect(steps.map((s) => [s.name, s.kind, s.state])).toEqual([
      ["a", "step", "completed"],
      ["b", "step", "completed"],
      ["nap", "sleep", "awake"],
      ["c", "step", "completed"],
    ]);
    expect(steps.map((s) => s.seq)).toEqual([1, 2, 3, 4]);
  });

  it("commits a transactional step's writes with its record, once, however often the job runs", async () => {
    const { id } = await t.conveyor.enqueue(transactional, { table: `${t.schema}.${table}` });
    const job = await ended(id);
    expect(job.status).toBe("succeeded");
    expect(callsOf(id, "write")).toBe(1);
    const { rows } = await sql(t.conveyor, `SELECT count(*)::int AS n FROM {{schema}}.${table} WHERE job_id = $1`, [id]);
    expect(rows[0].n).toBe(1);
  });

  it("delivers an event to a job already waiting, and one sent before the job reached its wait", async () => {
    const { id: early } = await t.conveyor.enqueue(waiting, { key: "acct_waiting" });
    await waitFor("the job to wait", async () => (await t.conveyor.getJob(early))?.status === "sleeping", 10_000);
    const sent = await t.conveyor.sendEvent({ event: "invoice.paid", key: "acct_waiting", payload: { amount: 42 } });
    expect(sent.jobIds).toEqual([early]);
    expect((await ended(early)).result).toEqual({ paid: { amount: 42 } });

    // Sent after the enqueue, before any worker ran the job: the wait takes it without sleeping.
    await worker.stop();
    const { id: late } = await t.conveyor.enqueue(waiting, { key: "acct_race" });
    const before = await t.conveyor.sendEvent({ event: "invoice.paid", key: "acct_race", payload: { amount: 7 } });
    expect(before.jobIds).toEqual([]);
    worker = t.conveyor.worker({ concurrency: 4, pollIntervalMs: 50, wakeIntervalMs: 50, reclaimIntervalMs: 200 });
    await worker.start();
    const job = await ended(late);
    expect(job.result).toEqual({ paid: { amount: 7 } });
    expect(job.executions.map((e) => e.outcome)).toEqual(["succeeded"]);
  });

  it("returns null after the timeout, and ignores events of another key or tenant", async () => {
    const { id } = await t.conveyor.enqueue(waiting, { key: "acct_timeout", timeoutMs: 300 });
    await t.conveyor.sendEvent({ event: "invoice.paid", key: "acct_other", payload: 1 });
    await t.conveyor.sendEvent({ event: "invoice.paid", key: "acct_timeout", tenant: "someone-else", payload: 2 });
    const job = await ended(id);
    expect(job.result).toEqual({ paid: null });
    const [wait] = await t.conveyor.steps.list(id);
    expect(wait).toMatchObject({ kind: "wait", state: "timed_out", event: "invoice.paid", eventKey: "acct_timeout" });
  });

  it("fails a job that uses one name twice in a run, permanently, with a clear error", async () => {
    const { id } = await t.conveyor.enqueue(twice, {});
    const job = await ended(id);
    expect(job.status).toBe("dead");
    expect(job.attempts).toBe(1);
    expect(job.lastError).toMatchObject({ name: "StepError" });
    expect(job.lastError!.message).toContain('"same": this name was already used in this run');
  });

  it("fails a step whose result is not JSON permanently, naming where, and rolls its transaction back", async () => {
    const { id } = await t.conveyor.enqueue(returnsQueryResult, { table: `${t.schema}.${table}` });
    const job = await ended(id);
    expect([job.status, job.attempts]).toEqual(["dead", 1]);
    const message = 'step "upgrade" returned a value that is not JSON: a function at result._types._types.getTypeParser'; // pg's TypeOverrides, then the parsers it falls back to
    expect(job.lastError).toMatchObject({ name: "StepError", message });
    const [upgrade] = await t.conveyor.steps.list(id);
    expect(upgrade).toMatchObject({ name: "upgrade", state: "failed", error: { name: "StepError", message } });
    const written = await sql(t.conveyor, `SELECT count(*)::int AS n FROM {{schema}}.${table} WHERE job_id = $1`, [id]);
    expect(written.rows).toEqual([{ n: 0 }]);
  });

  it("bounds a sleep until a Date as it bounds one of ms: at most 10 years ahead", async () => {
    const tooFar = [{ until: "9999-12-31T00:00:00.000Z" }, { ms: 11 * 365 * 24 * 60 * 60 * 1000 }];
    for (const payload of tooFar) {
      const job = await ended((await t.conveyor.enqueue(sleepsUntil, payload)).id);
      expect(job.status, JSON.stringify(payload)).toBe("dead");
      expect(job.lastError).toMatchObject({ name: "StepError" });
      expect(job.lastError!.message).toContain("(10 years)");
      expect(await t.conveyor.steps.list(job.id)).toEqual([]);
    }
    const until = new Date(Date.now() + 9 * 365 * 24 * 60 * 60 * 1000);
    const { id } = await t.conveyor.enqueue(sleepsUntil, { until: until.toISOString() });
    await waitFor("the job to sleep", async () => (await t.conveyor.getJob(id))?.status === "sleeping", 10_000);
    const [nap] = await t.conveyor.steps.list(id);
    expect(nap).toMatchObject({ kind: "sleep", state: "asleep", wakeAt: until });
    await t.conveyor.cancel(id);
  });

  it("cancels a sleeping job at once, and refuses to resume it", async () => {
    const { id } = await t.conveyor.enqueue(workflow, { sleepMs: 60_000 });
    await waitFor("the job to sleep", async () => (await t.conveyor.getJob(id))?.status === "sleeping", 10_000);
    const { outcome, job } = await t.conveyor.cancel(id);
    expect(outcome).toBe("cancelled");
    expect(job.status).toBe("cancelled");
    await expect(t.conveyor.steps.resume(id)).rejects.toBeInstanceOf(ConflictError);
  });

  it("reruns a sleeping job from a step: that step and every later one run again, earlier ones replay", async () => {
    const { id } = await t.conveyor.enqueue(workflow, { sleepMs: 60_000 });
    await waitFor("the job to sleep", async () => (await t.conveyor.getJob(id))?.status === "sleeping", 10_000);
    await expect(t.conveyor.steps.rerunFrom(id, "nope")).rejects.toBeInstanceOf(NotFoundError);
    await expect(t.conveyor.steps.rerunFrom(id, "")).rejects.toBeInstanceOf(ValidationError);
    const rerun = await t.conveyor.steps.rerunFrom(id, "b");
    expect(rerun.status).toBe("queued");
    await waitFor("the job to sleep again", async () => callsOf(id, "b") === 2 && (await t.conveyor.getJob(id))?.status === "sleeping", 10_000);
    expect(callsOf(id, "a")).toBe(1);
    const steps = await t.conveyor.steps.list(id);
    expect(steps.map((s) => s.name)).toEqual(["a", "b", "nap"]);
    await t.conveyor.cancel(id);
  });

  it("refuses bad events with a typed error naming the field", async () => {
    await expect(t.conveyor.sendEvent({ event: "" })).rejects.toBeInstanceOf(ValidationError);
    await expect(t.conveyor.sendEvent({ event: "e", key: "x".repeat(300) })).rejects.toThrow(/key must be/);
    await expect(t.conveyor.sendEvent({ event: "e", payload: () => 1 })).rejects.toBeInstanceOf(ValidationError);
  });
});
