/**
 * Durable execution over HTTP, run by a real worker: POST /v1/events wakes
 * the jobs of its tenant waiting for it (and no other tenant's), GET
 * /v1/jobs/{id}/steps lists a job's records, POST /v1/jobs/{id}/resume
 * replays a dead job's steps, POST /v1/jobs/{id}/rerun runs it again from
 * a step, and GET /v1/jobs/{id} names each requeue, bulk retry, resume and
 * rerun the job had; bad bodies, missing jobs and states that cannot rerun get their
 * problems; /metrics counts the events, the jobs they woke and the waits still open.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import type { AnyJobDefinition } from "../../packages/core/src/core/define-job.js";
import { defineJob, PermanentError, type Worker } from "../../packages/core/src/index.js";
import { waitFor } from "../helpers/wait-for.js";
import { allJobs, type ApiTest, call, createApiTest, expectProblem, JOB_FIELDS, silent } from "./support.js";

/** How many times each step function ran, by job and step. */
const calls = new Map<string, number>();
const count = (jobId: string, step: string) => calls.set(`${jobId}:${step}`, callsOf(jobId, step) + 1);
const callsOf = (jobId: string, step: string) => calls.get(`${jobId}:${step}`) ?? 0;
/** Couriers that are down: the "ship" step of an order sent with one fails permanently. */
const down = new Set<string>();

/** Waits for `invoice.paid` with its key, without a deadline, and returns what it received. */
const awaitPayment = defineJob({
  kind: "durable.await-payment",
  schema: z.object({ key: z.string() }),
  handler: async ({ payload, waitForEvent }) => ({ paid: await waitForEvent("paid", { event: "invoice.paid", key: payload.key }) }),
});

/** Three steps, and a sleep between the second and the third when `sleepMs` is given. */
const order = defineJob({
  kind: "durable.order",
  schema: z.object({ courier: z.string(), sleepMs: z.number().int().optional() }),
  handler: async ({ payload, job, step, sleep }) => {
    const charge = await step("charge", () => {
      count(job.id, "charge");
      return { charged: 42, at: Math.random() };
    });
    await step("ship", () => {
      count(job.id, "ship");
      if (down.has(payload.courier)) throw new PermanentError(`courier ${payload.courier} is down`);
      return "shipped";
    });
    if (payload.sleepMs !== undefined) await sleep("nap", payload.sleepMs);
    await step("notify", () => {
      count(job.id, "notify");
      return "sent";
    });
    return { charge };
  },
});

let test: ApiTest;
let worker: Worker;
beforeAll(async () => {
  test = await createApiTest({}, { jobs: [...allJobs, awaitPayment, order] as unknown as readonly AnyJobDefinition[] });
  worker = test.conveyor.worker({ concurrency: 4, kinds: [awaitPayment.kind, order.kind], pollIntervalMs: 50, wakeIntervalMs: 50, logger: silent });
  await worker.start();
});
afterAll(async () => {
  await worker?.stop();
  await test?.cleanup();
});

const post = (url: string, body?: unknown, key = test.keys.acme) => call(test.app, { method: "POST", url, key, body });
const get = (url: string, key = test.keys.acme) => call(test.app, { url, key });
const create = async (kind: string, payload: unknown, key = test.keys.acme, queue?: string) => {
  const response = await post("/v1/jobs", { kind, payload, queue }, key);
  expect(response.statusCode, response.body).toBe(201);
  return response.json as { id: string };
};
const statusOf = async (id: string, key = test.keys.acme) => (await get(`/v1/jobs/${id}`, key)).json.status as string;
const reaches = (id: string, status: string) => waitFor(`job ${id} ${status}`, async () => (await statusOf(id)) === status);
const stepsOf = async (id: string, key = test.keys.acme) => {
  const response = await get(`/v1/jobs/${id}/steps`, key);
  expect(response.statusCode, response.body).toBe(200);
  return response.json.items as Array<Record<string, any>>;
};
/**
 * Run `act` with `queue` paused, so the job it queues again stays queued
 * for the answer to show it so; the worker runs it once the queue resumes.
 */
async function whilePaused<T>(queue: string, act: () => Promise<T>): Promise<T> {
  expect((await post(`/v1/queues/${queue}/pause`, undefined, test.keys.admin)).statusCode).toBe(200);
  try {
    return await act();
  } finally {
    expect((await post(`/v1/queues/${queue}/resume`, undefined, test.keys.admin)).statusCode).toBe(200);
  }
}
const MISSING = "0190f5c2-0000-7000-8000-000000000000";
const STEP_FIELDS = ["attempt", "error", "event", "eventId", "eventKey", "executionId", "finishedAt", "kind", "name", "result", "seq", "startedAt", "state", "wakeAt"];

/** One sample of Prometheus text (a metric without labels). */
const sample = (text: string, name: string) => Number(text.split("\n").find((line) => line.startsWith(`${name} `))?.split(" ")[1]);

describe("POST /v1/events", () => {
  it("wakes the job waiting for it: the wait receives the payload and the job ends with it", async () => {
    const job = await create(awaitPayment.kind, { key: "acct_1" });
    await reaches(job.id, "sleeping");
    const [wait] = await stepsOf(job.id);
    expect(wait).toMatchObject({ name: "paid", kind: "wait", state: "awaiting", event: "invoice.paid", eventKey: "acct_1", wakeAt: null, eventId: null, finishedAt: null, result: null });

    const sent = await post("/v1/events", { event: "invoice.paid", key: "acct_1", payload: { plan: "pro" } });
    expect(sent.statusCode, sent.body).toBe(200);
    expect(sent.json).toEqual({ id: expect.any(String), jobIds: [job.id] });
    await reaches(job.id, "succeeded");
    expect((await get(`/v1/jobs/${job.id}`)).json.result).toEqual({ paid: { plan: "pro" } });
    const [received] = await stepsOf(job.id);
    expect(received).toMatchObject({ state: "received", eventId: sent.json.id, result: { plan: "pro" }, finishedAt: expect.any(String) });
  });

  it("wakes only its own tenant's jobs: another tenant's key wakes nothing, and may not name the tenant", async () => {
    const job = await create(awaitPayment.kind, { key: "acct_shared" });
    await reaches(job.id, "sleeping");
    const theirs = await post("/v1/events", { event: "invoice.paid", key: "acct_shared", payload: "from globex" }, test.keys.globex);
    expect(theirs.json.jobIds).toEqual([]);
    expectProblem(await post("/v1/events", { event: "invoice.paid", key: "acct_shared", tenant: "acme" }, test.keys.globex), 403, "FORBIDDEN");
    expect(await statusOf(job.id)).toBe("sleeping");
    expect((await stepsOf(job.id))[0]).toMatchObject({ state: "awaiting", eventId: null });
    // An admin key names the tenant; the job takes that event, not globex's.
    const ours = await post("/v1/events", { event: "invoice.paid", key: "acct_shared", payload: "from acme", tenant: "acme" }, test.keys.admin);
    expect(ours.json.jobIds).toEqual([job.id]);
    await reaches(job.id, "succeeded");
    expect((await get(`/v1/jobs/${job.id}`)).json.result).toEqual({ paid: "from acme" });
  });

  it("refuses bad bodies with 422 naming the field, and stores nothing", async () => {
    const refused = async (body: unknown, path: string) => {
      const problem = expectProblem(await post("/v1/events", body), 422, "VALIDATION");
      expect(problem.errors.map((error: { path: string }) => error.path)).toEqual([path]);
    };
    await refused({ event: "" }, "event");
    await refused({}, "event");
    await refused({ event: 7 }, "event");
    await refused({ event: "e", key: "k".repeat(256) }, "key");
    await refused({ event: "e\u0001" }, "event");
    await refused({ event: "e", color: "red" }, "color");
    await refused({ event: "e", payload: { blob: "x".repeat(300_000) } }, "payload");
    expectProblem(await post("/v1/events", "not json", test.keys.acme), 415, "UNSUPPORTED_MEDIA_TYPE");
    const events = await test.conveyor.pool.query(`SELECT count(*)::int AS n FROM "${test.schema}".events WHERE name = 'e'`);
    expect(events.rows[0].n).toBe(0);
    // The longest key is taken; an empty one means "no key".
    expect((await post("/v1/events", { event: "e", key: "k".repeat(255) })).statusCode).toBe(200);
    expect((await post("/v1/events", { event: "e", key: "" })).statusCode).toBe(200);
  });

  it("counts events sent and the jobs they woke on /metrics", async () => {
    const first = await create(awaitPayment.kind, { key: "acct_metered" });
    const second = await create(awaitPayment.kind, { key: "acct_metered" });
    await Promise.all([reaches(first.id, "sleeping"), reaches(second.id, "sleeping")]);
    const before = (await call(test.app, { url: "/metrics" })).body;
    expect((await post("/v1/events", { event: "invoice.paid", key: "acct_metered" })).json.jobIds.sort()).toEqual([first.id, second.id].sort());
    expect((await post("/v1/events", { event: "invoice.paid", key: "acct_nobody" })).json.jobIds).toEqual([]);
    const after = (await call(test.app, { url: "/metrics" })).body;
    expect(sample(after, "conveyor_events_sent_total") - sample(before, "conveyor_events_sent_total")).toBe(2);
    expect(sample(after, "conveyor_events_delivered_total") - sample(before, "conveyor_events_delivered_total")).toBe(2);
    // The two waits were open before the event and received it after.
    expect(sample(before, "conveyor_waits_open") - sample(after, "conveyor_waits_open")).toBe(2);
    await Promise.all([reaches(first.id, "succeeded"), reaches(second.id, "succeeded")]);
  });
});

describe("GET /v1/jobs/{id}/steps", () => {
  it("lists a job's steps and its sleep in order, with exactly the documented fields", async () => {
    const job = await create(order.kind, { courier: "steady", sleepMs: 600_000 });
    await reaches(job.id, "sleeping");
    const steps = await stepsOf(job.id);
    for (const step of steps) expect(Object.keys(step).sort()).toEqual(STEP_FIELDS);
    const running = (await get(`/v1/jobs/${job.id}`)).json.executions[0];
    expect(steps[0]).toEqual({
      name: "charge",
      seq: 1,
      kind: "step",
      state: "completed",
      result: { charged: 42, at: expect.any(Number) },
      error: null,
      attempt: 1,
      executionId: running.id,
      startedAt: expect.any(String),
      finishedAt: expect.any(String),
      wakeAt: null,
      event: null,
      eventKey: null,
      eventId: null,
    });
    expect(steps.map((step) => [step.seq, step.name, step.kind, step.state])).toEqual([
      [1, "charge", "step", "completed"],
      [2, "ship", "step", "completed"],
      [3, "nap", "sleep", "asleep"],
    ]);
    const nap = steps[2]!;
    expect(nap.finishedAt).toBeNull();
    // About ten minutes from when it fell asleep (the database's clock, give or take a loaded machine).
    const wakesIn = Date.parse(nap.wakeAt) - Date.parse(nap.startedAt);
    expect(wakesIn).toBeGreaterThan(590_000);
    expect(wakesIn).toBeLessThan(610_000);
    for (const step of steps) expect(new Date(step.startedAt).toISOString()).toBe(step.startedAt);
    await post(`/v1/jobs/${job.id}/cancel`);
  });

  it("answers an empty list for a job without steps, and 404 for a missing or another tenant's job", async () => {
    const plain = await create("item", { n: 1 });
    expect(await stepsOf(plain.id)).toEqual([]);
    expectProblem(await get(`/v1/jobs/${MISSING}/steps`), 404, "NOT_FOUND");
    const theirs = await create(order.kind, { courier: "steady", sleepMs: 600_000 }, test.keys.globex);
    await waitFor("globex's job asleep", async () => (await statusOf(theirs.id, test.keys.globex)) === "sleeping");
    expect(await stepsOf(theirs.id, test.keys.globex)).toHaveLength(3);
    expect(await stepsOf(theirs.id, test.keys.admin)).toHaveLength(3);
    expectProblem(await get(`/v1/jobs/${theirs.id}/steps`), 404, "NOT_FOUND");
    expectProblem(await get("/v1/jobs/abc/steps"), 400, "INVALID_PARAMETER");
    await post(`/v1/jobs/${theirs.id}/cancel`, undefined, test.keys.globex);
  });
});

describe("POST /v1/jobs/{id}/resume", () => {
  it("runs a dead durable job again with fresh attempts, replaying its recorded steps", async () => {
    down.add("broken-1");
    const job = await create(order.kind, { courier: "broken-1" }, test.keys.acme, "resumed");
    await reaches(job.id, "dead");
    const failed = await stepsOf(job.id);
    expect(failed.map((step) => [step.name, step.state])).toEqual([
      ["charge", "completed"],
      ["ship", "failed"],
    ]);
    expect(failed[1]!.error).toEqual({ name: "PermanentError", message: "courier broken-1 is down" });
    const charged = failed[0]!.result;

    down.delete("broken-1");
    const resumed = await whilePaused("resumed", async () => {
      const response = await post(`/v1/jobs/${job.id}/resume`);
      expect(response.statusCode, response.body).toBe(200);
      expect(Object.keys(response.json).sort()).toEqual(JOB_FIELDS);
      expect(response.json).toMatchObject({ id: job.id, status: "queued", attempts: 0, lastError: null, finishedAt: null });
      return response.json;
    });
    expect(resumed.id).toBe(job.id);
    await reaches(job.id, "succeeded");
    expect([callsOf(job.id, "charge"), callsOf(job.id, "ship"), callsOf(job.id, "notify")]).toEqual([1, 2, 1]);
    const done = (await get(`/v1/jobs/${job.id}`)).json;
    expect(done.result).toEqual({ charge: charged });
    expect(done.executions.map((execution: { outcome: string }) => execution.outcome)).toEqual(["failed", "succeeded"]);
    expect((await stepsOf(job.id)).map((step) => [step.name, step.state])).toEqual([
      ["charge", "completed"],
      ["ship", "completed"],
      ["notify", "completed"],
    ]);
    // It left the dead-letter queue.
    const letters = (await get(`/v1/dead-letters?kind=${order.kind}&limit=1000`)).json.items;
    expect(letters.filter((entry: { jobId: string }) => entry.jobId === job.id)).toEqual([]);
  });

  it("answers 409 for a job that cannot resume and 404 for a missing or another tenant's job, changing nothing", async () => {
    const job = await create(order.kind, { courier: "steady" });
    await reaches(job.id, "succeeded");
    const before = (await get(`/v1/jobs/${job.id}`)).json;
    const problem = expectProblem(await post(`/v1/jobs/${job.id}/resume`), 409, "CONFLICT");
    expect(problem.detail).toContain("succeeded");
    expectProblem(await post(`/v1/jobs/${job.id}/rerun`, { fromStep: "ship" }), 409, "CONFLICT");
    expect((await get(`/v1/jobs/${job.id}`)).json).toEqual(before);
    expectProblem(await post(`/v1/jobs/${MISSING}/resume`), 404, "NOT_FOUND");
    expectProblem(await post(`/v1/jobs/${job.id}/resume`, undefined, test.keys.globex), 404, "NOT_FOUND");
    expectProblem(await post("/v1/jobs/abc/resume"), 400, "INVALID_PARAMETER");
  });
});

describe("GET /v1/jobs/{id}: requeues", () => {
  it("names each way the job ran again, in order: a dead-letter requeue, a bulk retry, a resume, a rerun from a step", async () => {
    down.add("broken-requeues");
    const job = await create(order.kind, { courier: "broken-requeues" }, test.keys.acme, "requeued-4-ways");
    await reaches(job.id, "dead");
    expect((await get(`/v1/jobs/${job.id}`)).json.requeues).toEqual([]);

    const letters = (await get(`/v1/dead-letters?kind=${order.kind}&limit=1000`)).json.items as Array<{ id: string; jobId: string }>;
    const letter = letters.find((entry) => entry.jobId === job.id)!;
    expect((await post(`/v1/dead-letters/${letter.id}/requeue`)).statusCode).toBe(201);
    await reaches(job.id, "dead");
    const bulk = await post("/v1/bulk-actions", { action: "retry", filter: { status: "dead", queue: "requeued-4-ways" } });
    expect(bulk.statusCode, bulk.body).toBe(202);
    await waitFor("the bulk retry to end", async () => (await get(`/v1/bulk-actions/${bulk.json.id}`)).json.status === "succeeded");
    await reaches(job.id, "dead");
    expect((await post(`/v1/jobs/${job.id}/resume`)).statusCode).toBe(200);
    await reaches(job.id, "dead");
    down.delete("broken-requeues");
    expect((await post(`/v1/jobs/${job.id}/rerun`, { fromStep: "ship" })).statusCode).toBe(200);
    await reaches(job.id, "succeeded");

    const done = (await get(`/v1/jobs/${job.id}`)).json;
    expect(done.requeues).toEqual([
      { at: expect.any(String), action: "requeue" },
      { at: expect.any(String), action: "bulk_retry", bulkActionId: bulk.json.id },
      { at: expect.any(String), action: "resume" },
      { at: expect.any(String), action: "rerun", fromStep: "ship" },
    ]);
    // Each between the attempt before it and the one after it.
    const executions = done.executions as Array<{ startedAt: string; finishedAt: string; attempt: number }>;
    expect(executions.map((execution) => execution.attempt)).toEqual([1, 1, 1, 1, 1]);
    done.requeues.forEach((requeue: { at: string }, i: number) => {
      expect(Date.parse(requeue.at)).toBeGreaterThanOrEqual(Date.parse(executions[i]!.finishedAt));
      expect(Date.parse(requeue.at)).toBeLessThanOrEqual(Date.parse(executions[i + 1]!.startedAt));
    });
    // Another tenant's key sees none of it.
    expectProblem(await get(`/v1/jobs/${job.id}`, test.keys.globex), 404, "NOT_FOUND");
  });
});

describe("POST /v1/jobs/{id}/rerun", () => {
  it("forgets the step and every later record; earlier steps replay, the rest run again", async () => {
    const job = await create(order.kind, { courier: "steady", sleepMs: 600_000 }, test.keys.acme, "rerun");
    await reaches(job.id, "sleeping");
    const [charge, ship] = await stepsOf(job.id);

    await whilePaused("rerun", async () => {
      const rerun = await post(`/v1/jobs/${job.id}/rerun`, { fromStep: "ship" });
      expect(rerun.statusCode, rerun.body).toBe(200);
      expect(rerun.json).toMatchObject({ id: job.id, status: "queued" });
      // Forgotten until the job runs again: the step and the sleep after it.
      expect((await stepsOf(job.id)).map((step) => step.name)).toEqual(["charge"]);
    });
    await waitFor("ship to run again and the job to sleep again", async () => callsOf(job.id, "ship") === 2 && (await statusOf(job.id)) === "sleeping");
    expect(callsOf(job.id, "charge")).toBe(1);
    const steps = await stepsOf(job.id);
    expect(steps.map((step) => step.name)).toEqual(["charge", "ship", "nap"]);
    expect(steps[0]).toEqual(charge);
    expect(steps[1]!.executionId).not.toBe(ship!.executionId);
    await post(`/v1/jobs/${job.id}/cancel`);
  });

  it("answers 404 for a step the job does not have, 422 for a bad body, 409 for a cancelled job", async () => {
    const job = await create(order.kind, { courier: "steady", sleepMs: 600_000 });
    await reaches(job.id, "sleeping");
    const before = await stepsOf(job.id);
    const missing = expectProblem(await post(`/v1/jobs/${job.id}/rerun`, { fromStep: "pack" }), 404, "NOT_FOUND");
    expect(missing.detail).toBe(`job ${job.id} has no step named "pack"`);
    for (const [body, path] of [
      [{}, "fromStep"],
      [{ fromStep: "" }, "fromStep"],
      [{ fromStep: "s".repeat(256) }, "fromStep"],
      [{ fromStep: "ship", from: "ship" }, "from"],
    ] as const) {
      const problem = expectProblem(await post(`/v1/jobs/${job.id}/rerun`, body), 422, "VALIDATION");
      expect(problem.errors.map((error: { path: string }) => error.path)).toEqual([path]);
    }
    expect(await stepsOf(job.id)).toEqual(before);
    expect(await statusOf(job.id)).toBe("sleeping");
    expectProblem(await post(`/v1/jobs/${job.id}/rerun`, { fromStep: "ship" }, test.keys.globex), 404, "NOT_FOUND");
    expectProblem(await post(`/v1/jobs/${MISSING}/rerun`, { fromStep: "ship" }), 404, "NOT_FOUND");

    expect((await post(`/v1/jobs/${job.id}/cancel`)).json.status).toBe("cancelled");
    expectProblem(await post(`/v1/jobs/${job.id}/rerun`, { fromStep: "ship" }), 409, "CONFLICT");
    expectProblem(await post(`/v1/jobs/${job.id}/resume`), 409, "CONFLICT");
    expect(await stepsOf(job.id)).toEqual(before);
  });
});
