import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Worker } from "../../packages/core/src/index.js";
import { type ApiTest, call, createApiTest, expectProblem, releases, rows, silent } from "./support.js";
import { waitFor } from "../helpers/wait-for.js";

let test: ApiTest;
let worker: Worker;
/** globex's things, which acme must not see or touch. */
let theirs: { queued: string; running: string; deadLetter: string; deadJob: string };

beforeAll(async () => {
  test = await createApiTest();
  worker = test.conveyor.worker({ concurrency: 2, kinds: ["doomed", "held"], pollIntervalMs: 50, heartbeatMs: 100, leaseMs: 2_000, logger: silent });
  await worker.start();
  const create = async (body: unknown) => (await call(test.app, { method: "POST", url: "/v1/jobs", key: test.keys.globex, body })).json;
  const queued = await create({ kind: "item", payload: { n: 1 }, delayMs: 600_000 });
  const running = await create({ kind: "held", payload: {} });
  const doomed = await create({ kind: "doomed", payload: { why: "globex secret" } });
  await waitFor("globex held job running", () => releases.has(running.id));
  const entry = await waitFor("globex dead letter", async () => (await call(test.app, { url: "/v1/dead-letters", key: test.keys.globex })).json.items[0]);
  theirs = { queued: queued.id, running: running.id, deadLetter: entry.id, deadJob: doomed.id };
});
afterAll(async () => {
  for (const release of releases.values()) release();
  await worker.stop();
  await test.cleanup();
});

/**
 * Everything stored for globex, to prove a refused request changed nothing;
 * but the running job's lease expiry, which its worker's heartbeats move.
 */
const globexState = async () => ({
  jobs: (await rows(test, "SELECT * FROM {{schema}}.jobs WHERE tenant = 'globex' ORDER BY id")).map(({ lease_expires_at: _lease, ...job }) => job),
  executions: await rows(test, "SELECT e.* FROM {{schema}}.job_attempts e JOIN {{schema}}.jobs j ON j.id = e.job_id WHERE j.tenant = 'globex' ORDER BY e.id"),
});

describe("a tenant key on another tenant's ids", () => {
  it("gets 404 on every id route, exactly like a missing id, and nothing changes", async () => {
    const missing = "0190f5c2-0000-7000-8000-000000000000";
    const routes = (ids: { job: string; running: string; deadLetter: string }) => [
      { method: "GET" as const, url: `/v1/jobs/${ids.job}`, what: "job" },
      { method: "POST" as const, url: `/v1/jobs/${ids.job}/cancel`, what: "job" },
      { method: "POST" as const, url: `/v1/jobs/${ids.running}/cancel`, what: "job" },
      { method: "GET" as const, url: `/v1/dead-letters/${ids.deadLetter}`, what: "dead letter" },
      { method: "POST" as const, url: `/v1/dead-letters/${ids.deadLetter}/requeue`, what: "dead letter" },
      { method: "DELETE" as const, url: `/v1/dead-letters/${ids.deadLetter}`, what: "dead letter" },
    ];
    const before = await globexState();
    const foreign = routes({ job: theirs.queued, running: theirs.running, deadLetter: theirs.deadLetter });
    const absent = routes({ job: missing, running: missing, deadLetter: missing });
    for (const [index, route] of foreign.entries()) {
      const response = await call(test.app, { method: route.method, url: route.url, key: test.keys.acme });
      const problem = expectProblem(response, 404, "NOT_FOUND");
      const id = route.url.split("/")[3]!;
      expect(problem.detail).toBe(`${route.what} ${id} not found`);
      // Same answer as for an id that does not exist, but for the id itself and the request id.
      const control = await call(test.app, { method: absent[index]!.method, url: absent[index]!.url, key: test.keys.acme });
      const strip = (body: Record<string, unknown>) => ({ ...body, detail: String(body.detail).replace(id, "ID").replace(missing, "ID"), requestId: 0, instance: 0 });
      expect(strip(problem)).toEqual(strip(control.json));
      expect(Object.keys(response.headers).sort()).toEqual(Object.keys(control.headers).sort());
    }
    expect(await globexState()).toEqual(before);
    // The foreign dead-letter job's history is still there, and the running job was not asked to cancel.
    const running = await call(test.app, { url: `/v1/jobs/${theirs.running}`, key: test.keys.globex });
    expect(running.json).toMatchObject({ status: "running", cancelRequested: false });
  });

  it("never lists another tenant's jobs, dead letters, queue counts or running job ids", async () => {
    await call(test.app, { method: "POST", url: "/v1/jobs", key: test.keys.acme, body: { kind: "item", payload: { n: 1 }, delayMs: 600_000 } });
    const jobs = await call(test.app, { url: "/v1/jobs?limit=1000", key: test.keys.acme });
    expect(jobs.json.items.length).toBeGreaterThan(0);
    expect(jobs.json.items.every((job: { tenant: string }) => job.tenant === "acme")).toBe(true);
    const deadLetters = await call(test.app, { url: "/v1/dead-letters", key: test.keys.acme });
    expect(deadLetters.json.items).toEqual([]);
    const queues = await call(test.app, { url: "/v1/queues", key: test.keys.acme });
    const total = queues.json.items.reduce((sum: number, q: { counts: Record<string, number> }) => sum + Object.values(q.counts).reduce((a, b) => a + b, 0), 0);
    expect(total).toBe(jobs.json.items.length);
    expect((await call(test.app, { url: "/v1/jobs/count", key: test.keys.acme })).json).toEqual({ count: jobs.json.items.length, estimated: false });
    const overview = (await call(test.app, { url: "/v1/overview", key: test.keys.acme })).json;
    expect(overview.tenant).toBe("acme");
    const overviewTotal = overview.queues.reduce((sum: number, q: { counts: Record<string, number> }) => sum + Object.values(q.counts).reduce((a, b) => a + b, 0), 0);
    expect(overviewTotal).toBe(jobs.json.items.length);
    expect(overview.workers.find((w: { id: string }) => w.id === worker.id).running).toBe(0);
    expect(JSON.stringify(overview)).not.toContain("globex");
    const workers = await call(test.app, { url: "/v1/workers", key: test.keys.acme });
    const listed = workers.json.items.find((w: { id: string }) => w.id === worker.id);
    expect(listed.runningJobIds).toEqual([]);
    const globexWorkers = await call(test.app, { url: "/v1/workers", key: test.keys.globex });
    expect(globexWorkers.json.items.find((w: { id: string }) => w.id === worker.id).runningJobIds).toEqual([theirs.running]);
  });

  it("is refused with 403 when it names another tenant in a filter or a body, and nothing is written", async () => {
    const before = await rows(test, "SELECT count(*)::int AS n FROM {{schema}}.jobs");
    for (const url of ["/v1/jobs?tenant=globex", "/v1/jobs/count?tenant=globex", "/v1/dead-letters?tenant=globex", "/v1/queues?tenant=globex", "/v1/overview?tenant=globex"]) {
      const problem = expectProblem(await call(test.app, { url, key: test.keys.acme }), 403, "FORBIDDEN");
      expect(problem.detail).toBe('this API key belongs to tenant "acme" and cannot act for tenant "globex"');
    }
    expectProblem(
      await call(test.app, { method: "POST", url: "/v1/jobs", key: test.keys.acme, body: { kind: "item", payload: { n: 1 }, tenant: "globex" } }),
      403,
      "FORBIDDEN",
    );
    const batch = { jobs: [{ kind: "item", payload: { n: 1 } }, { kind: "item", payload: { n: 2 }, tenant: "globex" }] };
    expectProblem(await call(test.app, { method: "POST", url: "/v1/jobs/batch", key: test.keys.acme, body: batch }), 403, "FORBIDDEN");
    expect(await rows(test, "SELECT count(*)::int AS n FROM {{schema}}.jobs")).toEqual(before);
  });

  it("may name its own tenant, and its jobs belong to it", async () => {
    const response = await call(test.app, { method: "POST", url: "/v1/jobs", key: test.keys.acme, body: { kind: "item", payload: { n: 1 }, tenant: "acme" } });
    expect(response.statusCode).toBe(201);
    expect(response.json.tenant).toBe("acme");
    expect((await call(test.app, { url: "/v1/jobs?tenant=acme", key: test.keys.acme })).statusCode).toBe(200);
  });
});

describe("an admin key", () => {
  it("sees every tenant, and may filter by one", async () => {
    const all = await call(test.app, { url: "/v1/jobs?limit=1000", key: test.keys.admin });
    expect(new Set(all.json.items.map((job: { tenant: string }) => job.tenant))).toEqual(new Set(["acme", "globex"]));
    const globex = await call(test.app, { url: "/v1/jobs?tenant=globex&limit=1000", key: test.keys.admin });
    expect(globex.json.items.length).toBeGreaterThan(0);
    expect(globex.json.items.every((job: { tenant: string }) => job.tenant === "globex")).toBe(true);
    expect((await call(test.app, { url: `/v1/jobs/${theirs.queued}`, key: test.keys.admin })).statusCode).toBe(200);
    expect((await call(test.app, { url: `/v1/dead-letters/${theirs.deadLetter}`, key: test.keys.admin })).statusCode).toBe(200);
    const workers = await call(test.app, { url: "/v1/workers", key: test.keys.admin });
    expect(workers.json.items.find((w: { id: string }) => w.id === worker.id).runningJobIds).toEqual([theirs.running]);
  });

  it("creates jobs in the tenant it names, else in its own key's tenant (default)", async () => {
    const named = await call(test.app, { method: "POST", url: "/v1/jobs", key: test.keys.admin, body: { kind: "item", payload: { n: 1 }, tenant: "initech" } });
    expect(named.json.tenant).toBe("initech");
    const unnamed = await call(test.app, { method: "POST", url: "/v1/jobs", key: test.keys.admin, body: { kind: "item", payload: { n: 1 } } });
    expect(unnamed.json.tenant).toBe("default");
    expectProblem(await call(test.app, { method: "POST", url: "/v1/jobs", key: test.keys.admin, body: { kind: "item", payload: { n: 1 }, tenant: "" } }), 422, "VALIDATION");
  });

  it("acts on any tenant's job", async () => {
    const response = await call(test.app, { method: "POST", url: `/v1/jobs/${theirs.queued}/cancel`, key: test.keys.admin });
    expect(response.statusCode).toBe(200);
    expect(response.json.tenant).toBe("globex");
  });
});
