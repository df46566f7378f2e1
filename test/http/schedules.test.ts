/**
 * `GET /v1/schedules` through `inject`: the stored cron schedules as JSON,
 * scoped by tenant exactly as the other list routes are.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { Conveyor, defineJob } from "../../packages/core/src/index.js";
import { testDatabaseUrl } from "../helpers/database.js";
import { type ApiTest, call, createApiTest, expectProblem, silent } from "./support.js";

const report = defineJob({
  kind: "report.build",
  schema: z.object({ format: z.enum(["pdf", "csv"]) }),
  cron: [
    { name: "acme.daily", cron: "0 6 * * *", timezone: "Europe/Berlin", tenant: "acme", payload: { format: "pdf" } },
    { name: "globex.hourly", cron: "0 * * * *", tenant: "globex", payload: { format: "csv" }, missed: { policy: "catch-up", limit: 4 } },
  ],
  handler: async () => {},
});

let test: ApiTest;
beforeAll(async () => {
  test = await createApiTest();
  // A worker of another deploy (same schema) stores the schedules at start.
  const other = new Conveyor({ connectionString: testDatabaseUrl(), schema: test.schema, jobs: [report], logger: silent, poolSize: 2 });
  try {
    const worker = other.worker();
    await worker.start();
    await worker.stop();
  } finally {
    await other.close();
  }
});
afterAll(() => test.cleanup());

describe("GET /v1/schedules", () => {
  it("lists every schedule for an admin key, with its next tick", async () => {
    const response = await call(test.app, { url: "/v1/schedules", key: test.keys.admin });
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json.items.map((item: { name: string }) => item.name)).toEqual(["acme.daily", "globex.hourly"]);
    const [daily, hourly] = response.json.items;
    expect(daily).toEqual({
      name: "acme.daily",
      kind: "report.build",
      cron: "0 6 * * *",
      timezone: "Europe/Berlin",
      tenant: "acme",
      queue: "default",
      priority: 0,
      payload: { format: "pdf" },
      missed: { policy: "skip", limit: 10 },
      nextTickAt: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T0[45]:00:00\.000Z$/), // 06:00 Berlin is 04:00 or 05:00 UTC
      lastTickAt: null,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    expect(new Date(daily.nextTickAt).getTime()).toBeGreaterThan(Date.now() - 5_000);
    expect(hourly).toMatchObject({ tenant: "globex", missed: { policy: "catch-up", limit: 4 }, nextTickAt: expect.stringMatching(/T\d{2}:00:00\.000Z$/) });
  });

  it("shows a tenant key only its tenant's schedules; an admin may filter by tenant", async () => {
    const acme = await call(test.app, { url: "/v1/schedules", key: test.keys.acme });
    expect(acme.statusCode).toBe(200);
    expect(acme.json.items.map((item: { name: string }) => item.name)).toEqual(["acme.daily"]);
    const filtered = await call(test.app, { url: "/v1/schedules?tenant=globex", key: test.keys.admin });
    expect(filtered.json.items.map((item: { name: string }) => item.name)).toEqual(["globex.hourly"]);
  });

  it("refuses another tenant's filter with 403, and a missing key with 401", async () => {
    expectProblem(await call(test.app, { url: "/v1/schedules?tenant=globex", key: test.keys.acme }), 403, "FORBIDDEN");
    expectProblem(await call(test.app, { url: "/v1/schedules" }), 401, "UNAUTHORIZED");
    expectProblem(await call(test.app, { url: "/v1/schedules?bogus=1", key: test.keys.admin }), 400, "INVALID_PARAMETER");
  });
});
