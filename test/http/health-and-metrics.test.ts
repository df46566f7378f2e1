import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApp } from "../../packages/http/src/app.js";
import { createTestConveyor } from "../helpers/database.js";
import { allJobs, type ApiTest, call, createApiTest, expectProblem, silent } from "./support.js";

let test: ApiTest;
beforeAll(async () => {
  test = await createApiTest();
});
afterAll(() => test.cleanup());

/** The value of one sample line in Prometheus text, or undefined. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  const wanted = Object.entries(labels).map(([key, value]) => `${key}="${value}"`);
  for (const line of text.split("\n")) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (wanted.every((pair) => line.includes(pair))) return Number(line.slice(line.lastIndexOf(" ") + 1));
  }
  return undefined;
}

describe("GET /healthz and /readyz", () => {
  it("healthz: 200 while the process is up", async () => {
    const response = await call(test.app, { url: "/healthz" });
    expect(response.statusCode).toBe(200);
    expect(response.json).toEqual({ status: "ok" });
  });

  it("readyz: 200 when the database answers and the schema is current", async () => {
    const response = await call(test.app, { url: "/readyz" });
    expect(response.statusCode).toBe(200);
    expect(response.json).toEqual({ status: "ready", schemaVersion: expect.any(Number) });
    expect(response.json.schemaVersion).toBeGreaterThanOrEqual(1);
  });

  it("readyz: 503 when migrations have not run", async () => {
    const unmigrated = await createTestConveyor({ jobs: allJobs, logger: silent }, { migrate: false });
    const app = await buildApp(unmigrated.conveyor, { logger: silent });
    try {
      const problem = expectProblem(await call(app, { url: "/readyz" }), 503, "UNAVAILABLE");
      expect(problem.detail).toMatch(/^the database schema is at migration 0, this Conveyor needs \d+: run conveyor migrate$/);
      expect(problem.schemaVersion).toBe(0);
    } finally {
      await app.close();
      await unmigrated.cleanup();
    }
  });
});

describe("GET /metrics", () => {
  it("counts requests by route template and status, jobs enqueued, and reads queue depth from the database", async () => {
    const create = (body: unknown, key = test.keys.acme) => call(test.app, { method: "POST", url: "/v1/jobs", key, body });
    await create({ kind: "item", payload: { n: 1 }, queue: "metered" });
    await create({ kind: "item", payload: { n: 2 }, queue: "metered" });
    const delayed = (await create({ kind: "item", payload: { n: 3 }, queue: "metered", delayMs: 60_000 })).json;
    await call(test.app, { method: "POST", url: "/v1/jobs", key: test.keys.acme, body: { kind: "item", payload: { n: 4 } }, headers: { "idempotency-key": "m" } });
    await call(test.app, { method: "POST", url: "/v1/jobs", key: test.keys.acme, body: { kind: "item", payload: { n: 4 } }, headers: { "idempotency-key": "m" } });
    await call(test.app, { url: `/v1/jobs/${delayed.id}`, key: test.keys.acme });
    await call(test.app, { url: "/v1/jobs/0190f5c2-0000-7000-8000-000000000000", key: test.keys.acme });
    await call(test.app, { url: "/no/such/route/1" });
    await call(test.app, { url: "/no/such/route/2" });

    const response = await call(test.app, { url: "/metrics" });
    expect(response.statusCode).toBe(200);
    expect(response.headers["content-type"]).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = response.body;
    expect(sample(text, "conveyor_http_requests_total", { method: "POST", route: "/v1/jobs", status: "201" })).toBe(4);
    expect(sample(text, "conveyor_http_requests_total", { method: "POST", route: "/v1/jobs", status: "200" })).toBe(1);
    expect(sample(text, "conveyor_http_requests_total", { method: "GET", route: "/v1/jobs/:id", status: "200" })).toBe(1);
    expect(sample(text, "conveyor_http_requests_total", { method: "GET", route: "/v1/jobs/:id", status: "404" })).toBe(1);
    expect(sample(text, "conveyor_http_requests_total", { route: "unmatched", status: "404" })).toBe(2);
    expect(text).not.toContain("/no/such/route");
    expect(sample(text, "conveyor_http_request_duration_seconds_count", { method: "POST", route: "/v1/jobs" })).toBe(5);
    expect(sample(text, "conveyor_jobs_enqueued_total", { kind: "item", queue: "metered" })).toBe(3);
    expect(sample(text, "conveyor_jobs_enqueued_total", { kind: "item", queue: "default" })).toBe(1); // the idempotent repeat is not counted
    expect(sample(text, "conveyor_queue_depth", { queue: "metered", status: "queued" })).toBe(3);
    expect(sample(text, "conveyor_queue_depth_up")).toBe(1);
    expect(text).toContain("conveyor_api_process_cpu_seconds_total");
  });

  it("counts jobs waiting on dependencies in the depth, and batch callbacks by whether they wait", async () => {
    const post = (url: string, body?: unknown) => call(test.app, { method: "POST", url, key: test.keys.acme, body });
    const parent = (await post("/v1/jobs", { kind: "item", payload: { n: 1 }, queue: "gated", delayMs: 60_000 })).json;
    await post("/v1/jobs", { kind: "item", payload: { n: 2 }, queue: "gated", dependsOn: [parent.id] });
    await post("/v1/jobs", { kind: "item", payload: { n: 3 }, queue: "gated", dependsOn: [parent.id] });
    const batch = (when: string) =>
      post("/v1/batches", { jobs: [{ kind: "item", payload: { n: 1 }, delayMs: 60_000 }], callback: { kind: "item", payload: { n: 0 }, queue: "callbacks", when } });
    await batch("always");
    // A member cancelled: the callback of "always" is released, the callback of "succeeded" is skipped.
    const released = (await batch("always")).json;
    const skipped = (await batch("succeeded")).json;
    for (const made of [released, skipped]) expect((await post(`/v1/jobs/${made.jobs[0].id}/cancel`)).statusCode).toBe(200);

    const text = (await call(test.app, { url: "/metrics" })).body;
    expect(sample(text, "conveyor_queue_depth", { queue: "gated", status: "waiting" })).toBe(2);
    expect(sample(text, "conveyor_queue_depth", { queue: "gated", status: "queued" })).toBe(1);
    expect(sample(text, "conveyor_queue_depth", { queue: "callbacks", status: "waiting" })).toBe(1);
    expect(sample(text, "conveyor_flow_callbacks", { state: "waiting" })).toBe(1);
    expect(sample(text, "conveyor_flow_callbacks", { state: "released" })).toBe(1);
    expect(sample(text, "conveyor_flow_callbacks", { state: "skipped" })).toBe(1);
  });

  it("counts a deep queue's depth only up to the exact-count limit, and estimates the rest", async () => {
    const capped = await createTestConveyor({ jobs: allJobs, logger: silent, schema: test.schema, exactCountLimit: 3 });
    const app = await buildApp(capped.conveyor, { logger: silent });
    try {
      await capped.conveyor.enqueueMany(Array.from({ length: 12 }, (_, n) => ({ job: "item", payload: { n }, queue: "deep-depth", delayMs: 60_000 })));
      await capped.conveyor.enqueue("item", { n: 0 }, { queue: "shallow-depth", delayMs: 60_000 });
      await capped.conveyor.pool.query(`ANALYZE "${test.schema}".jobs`);
      const text = (await call(app, { url: "/metrics" })).body;
      // Above the limit: the planner's estimate, from statistics that have just counted this small table.
      expect(sample(text, "conveyor_queue_depth", { queue: "deep-depth", status: "queued" })).toBe(12);
      expect(sample(text, "conveyor_queue_depth", { queue: "shallow-depth", status: "queued" })).toBe(1);
      expect(sample(text, "conveyor_queue_depth", { queue: "shallow-depth", status: "dead" })).toBe(0);
    } finally {
      await app.close();
      await capped.cleanup();
    }
  });

  it("still answers when the database is down, counting the failed depth read", async () => {
    const { Conveyor } = await import("../../packages/core/src/index.js");
    const unreachable = new Conveyor({ connectionString: "postgres://nobody@127.0.0.1:9/none", jobs: allJobs, logger: silent });
    const app = await buildApp(unreachable, { logger: silent });
    try {
      const response = await call(app, { url: "/metrics" });
      expect(response.statusCode).toBe(200);
      expect(sample(response.body, "conveyor_queue_depth_up")).toBe(0);
      expect(response.body).not.toMatch(/^conveyor_queue_depth{/m);
    } finally {
      await app.close();
      await unreachable.close();
    }
  });
});
