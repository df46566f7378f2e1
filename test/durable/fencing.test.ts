/**
 * Durable records are fenced on the execution id: an attempt whose lease
 * expired and was reclaimed records no step, no transactional step's writes
 * and no suspension; a handler past its lease's local deadline records
 * nothing and sees its signal abort with LeaseLostError. Also: limits on
 * records and results, steps side by side, one event waking many waits,
 * and the race between an event and a job suspending on its wait.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { MAX_STEP_RESULT_BYTES, MAX_STEPS_PER_JOB } from "../../packages/core/src/core/defaults.js";
import { defineJob } from "../../packages/core/src/index.js";
import type { Worker } from "../../packages/core/src/worker/worker.js";
import { createTestConveyor, dbOf, storeOf, type TestConveyor } from "../helpers/database.js";
import { waitFor } from "../helpers/wait-for.js";
import { silent, sql } from "../worker/support.js";

const plain = defineJob({ kind: "fence.plain", schema: z.object({}), handler: () => {} });

/** Blocks its event loop inside a step past the lease, then returns: the record must not be written. */
let blockedReason: unknown;
const blocking = defineJob({
  kind: "fence.blocking",
  schema: z.object({ blockMs: z.number() }),
  maxAttempts: 1,
  async handler({ payload, step, signal }) {
    try {
      await step("slow", () => {
        const until = Date.now() + payload.blockMs;
        while (Date.now() < until) {
          // A handler that hogs the event loop: the lease keeper cannot renew meanwhile.
        }
        return "late";
      });
    } finally {
      blockedReason = signal.reason;
    }
  },
});

const many = defineJob({
  kind: "fence.many",
  schema: z.object({ steps: z.number(), bytes: z.number().default(1) }),
  maxAttempts: 3,
  async handler({ payload, step }) {
    const results = await Promise.all([step("left", () => "l"), step("right", () => "r")]);
    for (let i = 0; i < payload.steps; i += 1) await step(`s${i}`, () => i);
    await step("big", () => "x".repeat(payload.bytes));
    return results;
  },
});

const waiter = defineJob({
  kind: "fence.waiter",
  schema: z.object({ key: z.string() }),
  async handler({ payload, waitForEvent, step }) {
    await step("before", () => null);
    return waitForEvent("e", { event: "fence.event", key: payload.key });
  },
});

let t: TestConveyor;
let worker: Worker | null = null;
beforeAll(async () => {
  t = await createTestConveyor({ jobs: [plain, blocking, many, waiter], logger: silent });
});
afterAll(async () => {
  await worker?.stop();
  await t?.cleanup();
});

async function expiredAttempt(): Promise<{ id: string; executionId: string }> {
  const { id } = await t.conveyor.enqueue(plain, {}, { queue: `fence-${Math.random()}` });
  const job = (await t.conveyor.getJob(id))!;
  const [claimed] = await storeOf(t.conveyor).jobClaim("fence-worker", 1, ["fence.plain"], [job.queue], 1);
  await waitFor("the lease to expire", async () => (await sql(t.conveyor, "SELECT lease_expires_at < now() AS expired FROM {{schema}}.jobs WHERE id = $1", [id])).rows[0].expired, 5_000);
  const reclaimed = await storeOf(t.conveyor).jobReclaimExpired(100);
  expect(reclaimed.map((j) => j.id)).toContain(id);
  return { id, executionId: claimed!.executionId };
}

describe("durable records are fenced", () => {
  it("records no step, no suspension and no received event for an attempt that was reclaimed", async () => {
    const { id, executionId } = await expiredAttempt();
    const steps = dbOf(t.conveyor).steps;
    expect(await steps.jobStepRecord({ jobId: id, executionId, name: "a", state: "completed", result: "1", error: null, ranMs: 1 })).toBeUndefined();
    const suspended = await steps.jobSuspend({ jobId: id, executionId, workerId: "fence-worker", tenant: "default", name: "nap", kind: "sleep", at: null, inMs: 1000, event: null, key: null });
    expect(suspended).toEqual({ kind: "fenced" });
    await t.conveyor.sendEvent({ event: "fence.early", key: id });
    const waited = await steps.jobSuspend({ jobId: id, executionId, workerId: "fence-worker", tenant: "default", name: "w", kind: "wait", at: null, inMs: 1000, event: "fence.early", key: id });
    expect(waited).toEqual({ kind: "fenced" });
    expect(await t.conveyor.steps.list(id)).toEqual([]);
    expect((await t.conveyor.getJob(id))!.status).toBe("retrying");
  });

  it("rolls back a transactional step's writes when the record is fenced", async () => {
    const { id, executionId } = await expiredAttempt();
    const client = await t.conveyor.pool.connect();
    try {
      await client.query("BEGIN");
      await client.query(`CREATE TABLE IF NOT EXISTS "${t.schema}".fence_effects (job_id uuid)`);
      await client.query(`INSERT INTO "${t.schema}".fence_effects VALUES ($1)`, [id]);
      const stored = await dbOf(t.conveyor).steps.jobStepRecord({ jobId: id, executionId, name: "tx", state: "completed", result: "1", error: null, ranMs: 1 }, client);
      expect(stored).toBeUndefined();
      await client.query("ROLLBACK"); // as DurableRun does on a fenced record
    } finally {
      client.release();
    }
    await sql(t.conveyor, "CREATE TABLE IF NOT EXISTS {{schema}}.fence_effects (job_id uuid)");
    expect((await sql(t.conveyor, "SELECT count(*)::int AS n FROM {{schema}}.fence_effects WHERE job_id = $1", [id])).rows[0].n).toBe(0);
  });

  it("aborts a handler past its lease's deadline with LeaseLostError and records nothing", async () => {
    worker = t.conveyor.worker({ concurrency: 1, leaseMs: 500, heartbeatMs: 150, pollIntervalMs: 20, reclaimIntervalMs: 50, kinds: ["fence.blocking"] });
    await worker.start();
    const { id } = await t.conveyor.enqueue(blocking, { blockMs: 1_000 });
    await waitFor("the handler to give up", async () => blockedReason !== undefined, 10_000);
    expect((blockedReason as Error).name).toBe("LeaseLostError");
    await worker.stop();
    worker = null;
    expect(await t.conveyor.steps.list(id)).toEqual([]);
  });
});

describe("limits and shapes", () => {
  it("records steps run side by side, each once", async () => {
    worker = t.conveyor.worker({ concurrency: 2, pollIntervalMs: 20, kinds: ["fence.many", "fence.waiter"] });
    await worker.start();
    const { id } = await t.conveyor.enqueue(many, { steps: 2 });
    const job = await t.conveyor.waitFor(id, { timeoutMs: 10_000 });
    expect(job.result).toEqual(["l", "r"]);
    expect((await t.conveyor.steps.list(id)).map((s) => s.name).sort()).toEqual(["big", "left", "right", "s0", "s1"]);
  });

  it(`fails a job with more than MAX_STEPS_PER_JOB (${MAX_STEPS_PER_JOB}) records, or a result over MAX_STEP_RESULT_BYTES, permanently`, async () => {
    const tooMany = await t.conveyor.enqueue(many, { steps: MAX_STEPS_PER_JOB });
    const tooBig = await t.conveyor.enqueue(many, { steps: 0, bytes: MAX_STEP_RESULT_BYTES });
    const [a, b] = await Promise.all([t.conveyor.waitFor(tooMany.id, { timeoutMs: 60_000 }), t.conveyor.waitFor(tooBig.id, { timeoutMs: 10_000 })]);
    expect([a.status, a.attempts, a.lastError?.name]).toEqual(["dead", 1, "StepError"]);
    expect(a.lastError!.message).toContain("MAX_STEPS_PER_JOB");
    expect((await t.conveyor.steps.list(a.id)).filter((s) => s.state === "completed")).toHaveLength(MAX_STEPS_PER_JOB);
    expect([b.status, b.attempts, b.lastError?.name]).toEqual(["dead", 1, "StepError"]);
    expect(b.lastError!.message).toContain("MAX_STEP_RESULT_BYTES");
  }, 90_000);

  it("wakes every job waiting for one event with it, each once", async () => {
    const ids = await Promise.all([1, 2, 3].map(async () => (await t.conveyor.enqueue(waiter, { key: "shared" })).id));
    await waitFor("all three to wait", async () => (await Promise.all(ids.map((id) => t.conveyor.getJob(id)))).every((job) => job!.status === "sleeping"), 10_000);
    const sent = await t.conveyor.sendEvent({ event: "fence.event", key: "shared", payload: { n: 1 } });
    expect(sent.jobIds).toEqual([...ids].sort());
    for (const id of ids) expect((await t.conveyor.waitFor(id, { timeoutMs: 10_000 })).result).toEqual({ n: 1 });
    // A second event finds no open wait: each wait received the first one only.
    expect((await t.conveyor.sendEvent({ event: "fence.event", key: "shared", payload: { n: 2 } })).jobIds).toEqual([]);
  });

  it("loses no event that races a job suspending on its wait", async () => {
    const keys = Array.from({ length: 60 }, (_, i) => `race-${i}`);
    const jobs = await Promise.all(keys.map(async (key) => ({ key, id: (await t.conveyor.enqueue(waiter, { key })).id })));
    // Each event is sent at a random moment around its job's first run: before, during or after its suspension.
    await Promise.all(
      jobs.map(async ({ key }) => {
        await new Promise((resolve) => setTimeout(resolve, Math.random() * 150));
        await t.conveyor.sendEvent({ event: "fence.event", key, payload: key });
      }),
    );
    for (const { key, id } of jobs) {
      const job = await t.conveyor.waitFor(id, { timeoutMs: 20_000 });
      expect(job.result).toBe(key);
      const received = (await t.conveyor.steps.list(id)).filter((s) => s.kind === "wait");
      expect(received).toMatchObject([{ state: "received", eventKey: key }]);
    }
  }, 60_000);
});
