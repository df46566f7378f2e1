/**
 * What the API adds for the dashboard, through `inject`: the built files at
 * `/` and `/assets/*` with their security headers, kept out of the OpenAPI
 * document, and `GET /v1/stats/throughput` (jobs per minute over the last
 * hour, of every queue or one) with the API's tenant rules.
 */
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApp, type ConveyorApp } from "../../packages/http/src/app.js";
import { dashboardDirectory } from "../../packages/http/src/dashboard.js";
import exampleJobs from "../../packages/core/examples/jobs.js";
import { createTestConveyor, type TestConveyor } from "../helpers/database.js";
import { runUntilFinished, silent } from "../cli/support.js";

let test: TestConveyor;
let app: ConveyorApp;
let admin: string;
let acme: string;

beforeAll(async () => {
  test = await createTestConveyor({ jobs: exampleJobs, logger: silent });
  const keys = test.conveyor.apiKeys;
  admin = (await keys.create({ admin: true })).key;
  acme = (await keys.create({ tenant: "acme" })).key;
  app = await buildApp(test.conveyor, { logger: silent });
});
afterAll(async () => {
  await app?.close();
  await test?.cleanup();
});

describe("the dashboard files", () => {
  it("serves the build at / and /assets with a strict Content-Security-Policy", async () => {
    const dir = dashboardDirectory()!;
    expect(existsSync(join(dir, "index.html")), `${dir} is missing: run npm run build`).toBe(true);
    const index = await app.inject({ method: "GET", url: "/" });
    expect(index.statusCode).toBe(200);
    expect(index.headers["content-type"]).toMatch(/^text\/html/);
    expect(index.headers["cache-control"]).toBe("no-cache");
    const csp = String(index.headers["content-security-policy"]);
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain("unsafe-inline");
    expect(index.headers["x-content-type-options"]).toBe("nosniff");
    expect(index.body).not.toMatch(/<script>(?!<\/script>)/); // no inline script

    const script = readdirSync(join(dir, "assets")).find((name) => name.endsWith(".js"))!;
    const asset = await app.inject({ method: "GET", url: `/assets/${script}` });
    expect(asset.statusCode).toBe(200);
    expect(asset.headers["content-type"]).toMatch(/^text\/javascript/);
    expect(asset.headers["cache-control"]).toContain("immutable");
    const again = await app.inject({ method: "GET", url: `/assets/${script}`, headers: { "if-none-match": String(asset.headers.etag) } });
    expect(again.statusCode).toBe(304);

    for (const url of ["/assets/nope.js", "/assets/../../package.json", "/assets/%2e%2e/%2e%2e/package.json", "/index.html.bak"]) {
      const missing = await app.inject({ method: "GET", url });
      expect(missing.statusCode, url).toBe(404);
      expect(missing.headers["content-type"]).toMatch(/^application\/problem\+json/);
    }
  });

  it("keeps its routes and the stats route out of the OpenAPI document", async () => {
    const document = (await app.inject({ method: "GET", url: "/openapi.json" })).json();
    expect(Object.keys(document.paths)).not.toContain("/");
    expect(Object.keys(document.paths).filter((path) => path.startsWith("/assets") || path.startsWith("/v1/stats"))).toEqual([]);
  });
});

describe("GET /v1/stats/throughput", () => {
  it("counts jobs enqueued and attempts finished per minute, per tenant for tenant keys", async () => {
    await test.conveyor.enqueueMany([
      { job: "text.summarize", payload: { text: "one two three" } },
      { job: "text.summarize", payload: { text: "four five" } },
      { job: "email.send", payload: { to: "x@invalid.example", subject: "s", body: "b" } },
      { job: "text.summarize", payload: { text: "acme's" }, tenant: "acme" },
    ]);
    await runUntilFinished(test.conveyor, ["text.summarize", "email.send"]);

    const get = (key: string, query = "") => app.inject({ method: "GET", url: `/v1/stats/throughput${query}`, headers: { authorization: `Bearer ${key}` } });
    const all = await get(admin);
    expect(all.statusCode).toBe(200);
    const { minutes } = all.json() as { minutes: Array<{ minute: string; enqueued: number; succeeded: number; failed: number }> };
    expect(minutes).toHaveLength(60);
    const times = minutes.map((m) => Date.parse(m.minute));
    expect(times.every((t, i) => i === 0 || t - times[i - 1]! === 60_000)).toBe(true);
    const sum = (list: typeof minutes, field: "enqueued" | "succeeded" | "failed") => list.reduce((total, m) => total + m[field], 0);
    expect([sum(minutes, "enqueued"), sum(minutes, "succeeded"), sum(minutes, "failed")]).toEqual([4, 3, 1]);

    const tenant = (await get(acme)).json() as { minutes: typeof minutes };
    expect([sum(tenant.minutes, "enqueued"), sum(tenant.minutes, "succeeded"), sum(tenant.minutes, "failed")]).toEqual([1, 1, 0]);
    expect((await get(admin, "?tenant=acme")).json()).toEqual(tenant);
    expect((await get(acme, "?tenant=default")).statusCode).toBe(403);
    expect((await get("cvk_wrong")).statusCode).toBe(401);
  });

  it("counts one queue's jobs and attempts with ?queue=, and refuses a queue that is not a name, naming the field", async () => {
    await test.conveyor.enqueueMany([
      { job: "text.summarize", payload: { text: "in reports" }, queue: "reports" },
      { job: "text.summarize", payload: { text: "in reports too" }, queue: "reports", tenant: "acme" },
    ]);
    await runUntilFinished(test.conveyor, ["text.summarize"]);
    const get = (key: string, query: string) => app.inject({ method: "GET", url: `/v1/stats/throughput${query}`, headers: { authorization: `Bearer ${key}` } });
    const totals = async (key: string, query: string) => {
      const answer = await get(key, query);
      expect(answer.statusCode, query).toBe(200);
      const { minutes } = answer.json() as { minutes: Array<{ enqueued: number; succeeded: number; failed: number }> };
      expect(minutes).toHaveLength(60);
      return minutes.reduce((sum, m) => [sum[0]! + m.enqueued, sum[1]! + m.succeeded, sum[2]! + m.failed], [0, 0, 0]);
    };
    expect(await totals(admin, "?queue=reports")).toEqual([2, 2, 0]);
    expect(await totals(acme, "?queue=reports")).toEqual([1, 1, 0]);
    expect(await totals(admin, "?queue=reports&tenant=acme")).toEqual([1, 1, 0]);
    expect(await totals(admin, "?queue=nothing-here")).toEqual([0, 0, 0]);

    const refused = await get(admin, "?queue=has%20a%20space");
    expect(refused.statusCode).toBe(422);
    expect(refused.headers["content-type"]).toMatch(/^application\/problem\+json/);
    expect(refused.json().errors).toEqual([expect.objectContaining({ path: "queue" })]);
  });
});
