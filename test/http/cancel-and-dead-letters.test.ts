import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Worker } from "../../packages/core/src/index.js";
import { type ApiTest, call, createApiTest, expectProblem, JOB_FIELDS, releases, rows, silent } from "./support.js";
import { waitFor } from "../helpers/wait-for.js";

let test: ApiTest;
let worker: Worker;
beforeAll(async () => {
  test = await createApiTest();
  worker = test.conveyor.worker({ concurrency: 4, kinds: ["doomed", "held"], pollIntervalMs: 50, heartbeatMs: 100, leaseMs: 2_000, logger: silent });
  await worker.start();
});
afterAll(async () => {
  for (const release of releases.values()) release();
  await worker.stop();
  await test.cleanup();
});

const create = async (body: unknown, key = test.keys.acme) => {
  const response = await call(test.app, { method: "POST", url: "/v1/jobs", key, body });
  expect(response.statusCode, response.body).toBe(201);
  return response.json;
};
const get = (id: string, key = test.keys.acme) => call(test.app, { url: `/v1/jobs/${id}`, key });
const cancel = (id: string, key = test.keys.acme) => call(test.app, { method: "POST", url: `/v1/jobs/${id}/cancel`, key });

/** A job that the worker dead-letters at once; resolves to its dead-letter entry. */
async function deadLetter(why: string, key = test.keys.acme) {
  const job = await create({ kind: "doomed", payload: { why } }, key);
  return waitFor(`job ${job.id} dead-lettered`, async () => {
    const list = await call(test.app, { url: "/v1/dead-letters?limit=1000", key });
    return list.json.items.find((entry: { jobId: string }) => entry.jobId === job.id);
  });
}

describe("POST /v1/jobs/{id}/cancel", () => {
  it("cancels a queued job at once: 200", async () => {
    const job = await create({ kind: "item", payload: { n: 1 }, delayMs: 60_000 });
    const response = await cancel(job.id);
    expect(response.statusCode).toBe(200);
    expect(Object.keys(response.json).sort()).toEqual(JOB_FIELDS);
    expect(response.json).toMatchObject({ id: job.id, status: "cancelled", cancelRequested: true, finishedAt: expect.any(String) });
  });

  it("requests cancellation of a running job: 202, then the handler's signal aborts and the job ends cancelled", async () => {
    const job = await create({ kind: "held", payload: {} });
    await waitFor("held job running", () => releases.has(job.id));
    const response = await cancel(job.id);
    expect(response.statusCode).toBe(202);
    expect(response.json).toMatchObject({ id: job.id, status: "running", cancelRequested: true, finishedAt: null });
    const ended = await waitFor("job cancelled", async () => ((await get(job.id)).json.status === "cancelled" ? (await get(job.id)).json : null));
    expect(ended.executions).toHaveLength(1);
    expect(ended.executions[0]).toMatchObject({ attempt: 1, outcome: "cancelled", workerId: worker.id, finishedAt: expect.any(String) });
    expect(Object.keys(ended.executions[0]).sort()).toEqual(["attempt", "batch", "error", "finishedAt", "id", "outcome", "startedAt", "workerId"]);
    expect(ended.executions[0].batch).toBeNull(); // not a batch handler's job
  });

  it("answers 409 for a terminal job and changes nothing", async () => {
    const job = await create({ kind: "item", payload: { n: 2 }, delayMs: 60_000 });
    await cancel(job.id);
    const before = (await get(job.id)).json;
    const problem = expectProblem(await cancel(job.id), 409, "ALREADY_TERMINAL");
    expect(problem.detail).toBe(`job ${job.id} is already cancelled; nothing changed`);
    expect(problem.jobStatus).toBe("cancelled");
    expect((await get(job.id)).json).toEqual(before);
  });

  it("answers 404 for a missing job and 400 for a bad id", async () => {
    expectProblem(await cancel("0190f5c2-0000-7000-8000-000000000000"), 404, "NOT_FOUND");
    expectProblem(await cancel("abc"), 400, "INVALID_PARAMETER");
  });
});

describe("dead letters", () => {
  it("lists and shows an entry with payload, reason, last error and the whole history", async () => {
    const entry = await deadLetter("account deleted");
    expect(entry).toMatchObject({
      tenant: "acme",
      kind: "doomed",
      queue: "default",
      payload: { why: "account deleted" },
      attempts: 1,
      reason: "permanent_error",
      lastError: { name: "PermanentError", message: "account deleted" },
    });
    expect(entry.lastError.stack).toBeUndefined(); // stacks stay in the database and the worker's logs
    const shown = await call(test.app, { url: `/v1/dead-letters/${entry.id}`, key: test.keys.acme });
    expect(shown.statusCode).toBe(200);
    expect(shown.json).toEqual(entry);
    expect(shown.json.history).toEqual([
      {
        id: expect.any(String),
        attempt: 1,
        workerId: worker.id,
        startedAt: expect.any(String),
        finishedAt: expect.any(String),
        outcome: "failed",
        error: { name: "PermanentError", message: "account deleted" },
        batch: null,
      },
    ]);
    expect(new Date(shown.json.history[0].startedAt).toISOString()).toBe(shown.json.history[0].startedAt);
    const job = await get(entry.jobId);
    expect(job.json).toMatchObject({ status: "dead", lastError: { name: "PermanentError", message: "account deleted" } });
  });

  it("requeues: 201 with the job back in its queue (same id, fresh attempts), and the entry is gone", async () => {
    const entry = await deadLetter("try me again");
    const response = await call(test.app, { method: "POST", url: `/v1/dead-letters/${entry.id}/requeue`, key: test.keys.acme });
    expect(response.statusCode).toBe(201);
    expect(response.headers.location).toBe(`/v1/jobs/${entry.jobId}`);
    expect(response.json).toMatchObject({ id: entry.jobId, status: "queued", attempts: 0, finishedAt: null });
    expectProblem(await call(test.app, { url: `/v1/dead-letters/${entry.id}`, key: test.keys.acme }), 404, "NOT_FOUND");
    expectProblem(await call(test.app, { method: "POST", url: `/v1/dead-letters/${entry.id}/requeue`, key: test.keys.acme }), 404, "NOT_FOUND");
    // The worker runs it again (and it dies again): history kept across the requeue.
    const again = await waitFor("dead again", async () => {
      const job = (await get(entry.jobId)).json;
      return job.status === "dead" ? job : null;
    });
    expect(again.executions).toHaveLength(2);
  });

  it("purges: 204, and the job and its history are gone", async () => {
    const entry = await deadLetter("purge me");
    const response = await call(test.app, { method: "DELETE", url: `/v1/dead-letters/${entry.id}`, key: test.keys.acme });
    expect(response.statusCode).toBe(204);
    expect(response.body).toBe("");
    expectProblem(await get(entry.jobId), 404, "NOT_FOUND");
    expect(await rows(test, "SELECT count(*)::int AS n FROM {{schema}}.job_attempts WHERE job_id = $1", [entry.jobId])).toEqual([{ n: 0 }]);
    expectProblem(await call(test.app, { method: "DELETE", url: `/v1/dead-letters/${entry.id}`, key: test.keys.acme }), 404, "NOT_FOUND");
  });

  it("filters and pages the list", async () => {
    const entries = [await deadLetter("one"), await deadLetter("two"), await deadLetter("three")];
    const page = await call(test.app, { url: "/v1/dead-letters?kind=doomed&limit=2", key: test.keys.acme });
    expect(page.statusCode).toBe(200);
    expect(page.json.items).toHaveLength(2);
    expect(page.json.items.map((entry: { id: string }) => entry.id)).toEqual([entries[2]!.id, entries[1]!.id]);
    const next = await call(test.app, { url: `/v1/dead-letters?kind=doomed&limit=2&cursor=${page.json.nextCursor}`, key: test.keys.acme });
    expect(next.json.items[0].id).toBe(entries[0]!.id);
    const none = await call(test.app, { url: "/v1/dead-letters?kind=item", key: test.keys.acme });
    expect(none.json).toEqual({ items: [], nextCursor: null });
    expectProblem(await call(test.app, { url: "/v1/dead-letters?limit=-1", key: test.keys.acme }), 400, "INVALID_PARAMETER");
    expectProblem(await call(test.app, { url: "/v1/dead-letters/not-a-uuid", key: test.keys.acme }), 400, "INVALID_PARAMETER");
  });
});

describe("GET /v1/queues and /v1/workers", () => {
  it("counts jobs by status per queue and ages the oldest ready job", async () => {
    await create({ kind: "item", payload: { n: 1 }, queue: "stats" });
    await create({ kind: "item", payload: { n: 2 }, queue: "stats" });
    const later = await create({ kind: "item", payload: { n: 3 }, queue: "stats", delayMs: 60_000 });
    await cancel(later.id);
    // The age is the database's now() minus the oldest ready run_at, so it lies between that
    // difference read on the database's clock just before the request and just after it.
    const ageNow = async (): Promise<number> =>
      (
        await rows(
          test,
          "SELECT (extract(epoch FROM clock_timestamp() - min(run_at)) * 1000)::float8 AS age FROM {{schema}}.jobs WHERE queue = 'stats' AND status IN ('queued', 'retrying')",
        )
      )[0].age;
    const before = await ageNow();
    const response = await call(test.app, { url: "/v1/queues", key: test.keys.acme });
    const after = await ageNow();
    expect(response.statusCode).toBe(200);
    const stats = response.json.items.find((queue: { queue: string }) => queue.queue === "stats");
    expect(stats.counts).toEqual({ waiting: 0, queued: 2, running: 0, retrying: 0, sleeping: 0, succeeded: 0, cancelled: 1, dead: 0 });
    // A store this small is counted through: no count is an estimate.
    expect(stats.estimated).toEqual({ waiting: false, queued: false, running: false, retrying: false, sleeping: false, succeeded: false, cancelled: false, dead: false });
    expect(stats.oldestReadyAgeMs).toBeGreaterThanOrEqual(before);
    expect(stats.oldestReadyAgeMs).toBeLessThanOrEqual(after);
    const empty = response.json.items.find((queue: { queue: string }) => queue.queue === "default");
    expect(empty.oldestReadyAgeMs === null || typeof empty.oldestReadyAgeMs === "number").toBe(true);
  });

  it("lists live workers with their running jobs", async () => {
    const job = await create({ kind: "held", payload: {} });
    await waitFor("held job running", () => releases.has(job.id));
    const response = await call(test.app, { url: "/v1/workers", key: test.keys.acme });
    expect(response.statusCode).toBe(200);
    const me = response.json.items.find((w: { id: string }) => w.id === worker.id);
    expect(me).toMatchObject({ concurrency: 4, kinds: ["doomed", "held"], queues: null, runningJobIds: [job.id] });
    expect(typeof me.hostname).toBe("string");
    releases.get(job.id)!();
    await waitFor("held job done", async () => (await get(job.id)).json.status === "succeeded");
  });
});
