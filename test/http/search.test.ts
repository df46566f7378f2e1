/**
 * `GET /v1/jobs` with every filter, `GET /v1/jobs/count` and
 * `GET /v1/overview` through the app: each query parameter finds exactly
 * the jobs it should, tenant keys see only their tenant, bad parameters are
 * refused with a problem naming them, and a search past the time bound is
 * answered 422 SEARCH_TIMEOUT.
 */
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { quoteIdent } from "../../packages/core/src/store/db.js";
import { connectTestClient, createTestConveyor, type TestConveyor } from "../helpers/database.js";
import { type FixtureJob, fixtureJobs, idsWhere, insertFixtureJobs } from "../helpers/search-fixture.js";
import { buildApp } from "../../packages/http/src/app.js";
import { type ApiTest, call, createApiTest, expectProblem, rows, silent } from "./support.js";

const DAY = 24 * 60 * 60 * 1000;
const jobs = fixtureJobs(42, Date.now() - 10 * DAY);
const at = (index: number) => jobs[index]!.createdAt.toISOString();

let test: ApiTest;
beforeAll(async () => {
  test = await createApiTest();
  await insertFixtureJobs(test.conveyor.pool, quoteIdent(test.schema), jobs);
});
afterAll(() => test?.cleanup());

const query = (params: Record<string, string>) => new URLSearchParams(params).toString();

async function listIds(params: Record<string, string>, key = test.keys.admin): Promise<string[]> {
  const response = await call(test.app, { url: `/v1/jobs?${query({ ...params, limit: "1000" })}`, key });
  expect(response.statusCode, response.body).toBe(200);
  expect(response.json.nextCursor).toBeNull();
  return response.json.items.map((job: { id: string }) => job.id);
}

async function count(params: Record<string, string>, key = test.keys.admin): Promise<{ count: number; estimated: boolean }> {
  const response = await call(test.app, { url: `/v1/jobs/count?${query(params)}`, key });
  expect(response.statusCode, response.body).toBe(200);
  return response.json;
}

const CASES: Array<[Record<string, string>, (job: FixtureJob) => boolean]> = [
  [{ tenant: "acme" }, (job) => job.tenant === "acme"],
  [{ status: "dead" }, (job) => job.status === "dead"],
  [{ status: "queued,retrying" }, (job) => job.status === "queued" || job.status === "retrying"],
  [{ queue: "reports" }, (job) => job.queue === "reports"],
  [{ kind: "invoice.charge" }, (job) => job.kind === "invoice.charge"],
  [{ id: jobs[20]!.id }, (job) => job.id === jobs[20]!.id],
  [{ id: jobs[20]!.id.slice(0, 13) }, (job) => job.id.startsWith(jobs[20]!.id.slice(0, 13))],
  [{ idempotencyKey: "idem-12" }, (job) => job.idempotencyKey === "idem-12"],
  [{ uniqueKey: "unique-3" }, (job) => job.uniqueKey === "unique-3"],
  [{ payload: '{"address":{"region":"eu"}}' }, (job) => job.payload.address.region === "eu"],
  [{ error: "503" }, (job) => job.error?.includes("503") === true],
  [{ createdAfter: at(12), createdBefore: at(30) }, (job) => job.createdAt >= new Date(at(12)) && job.createdAt < new Date(at(30))],
  [{ finishedAfter: at(8), finishedBefore: at(33) }, (job) => job.finishedAt !== null && job.finishedAt >= new Date(at(8)) && job.finishedAt < new Date(at(33))],
  [{ queue: "mail", status: "succeeded,dead", kind: "email.send" }, (job) => job.queue === "mail" && (job.status === "succeeded" || job.status === "dead") && job.kind === "email.send"],
];

describe("GET /v1/jobs and GET /v1/jobs/count", () => {
  for (const [params, match] of CASES) {
    it(`?${query(params)}: lists and counts exactly the matching jobs`, async () => {
      const expected = idsWhere(jobs, match);
      expect(expected.length).toBeGreaterThan(0);
      expect(expected.length).toBeLessThan(jobs.length);
      expect(await listIds(params)).toEqual(expected);
      expect(await count(params)).toEqual({ count: expected.length, estimated: false });
    });
  }

  it("pages a search with limit and cursor, each job once", async () => {
    const expected = idsWhere(jobs, (job) => job.queue === "mail");
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const params: Record<string, string> = { queue: "mail", limit: "5", ...(cursor ? { cursor } : {}) };
      const response = await call(test.app, { url: `/v1/jobs?${query(params)}`, key: test.keys.admin });
      expect(response.statusCode).toBe(200);
      seen.push(...response.json.items.map((job: { id: string }) => job.id));
      cursor = response.json.nextCursor;
    } while (cursor);
    expect(seen).toEqual(expected);
  });

  it("gives a tenant key its own tenant's jobs only, and refuses another tenant with 403", async () => {
    const acme = idsWhere(jobs, (job) => job.tenant === "acme" && job.queue === "billing");
    expect(await listIds({ queue: "billing" }, test.keys.acme)).toEqual(acme);
    expect(await listIds({ queue: "billing", tenant: "acme" }, test.keys.acme)).toEqual(acme);
    expect(await count({ queue: "billing" }, test.keys.acme)).toEqual({ count: acme.length, estimated: false });
    // Another tenant's job by its exact id: not found, as a missing one.
    const theirs = jobs.find((job) => job.tenant === "globex")!;
    expect(await listIds({ id: theirs.id }, test.keys.acme)).toEqual([]);
    expect(await count({ id: theirs.id }, test.keys.acme)).toEqual({ count: 0, estimated: false });
    for (const url of ["/v1/jobs?tenant=globex", "/v1/jobs/count?tenant=globex", "/v1/overview?tenant=globex"]) {
      expectProblem(await call(test.app, { url, key: test.keys.acme }), 403, "FORBIDDEN");
    }
  });

  it("refuses bad parameters with 400 naming each, and changes nothing", async () => {
    const before = await rows(test, "SELECT md5(string_agg(j::text, '|' ORDER BY j.id)) AS digest FROM {{schema}}.jobs AS j");
    const cases: Array<[string, string, RegExp]> = [
      ["queues=mail", "queues", /is not a known field/],
      ["status=done", "status", /must be one or more of waiting, queued, running, retrying, sleeping, succeeded, cancelled, dead, comma-separated; got "done"/],
      ["status=queued,", "status", /got ""/],
      ["createdAfter=yesterday", "createdAfter", /ISO 8601/],
      ["finishedBefore=2026-02-30T00:00:00Z", "finishedBefore", /ISO 8601/],
      ["createdAfter=2026-01-01T00:00:00", "createdAfter", /with a time zone/],
      ["payload=%7Bnot-json", "payload", /must be a JSON object/],
      ["payload=%5B1%2C2%5D", "payload", /must be a JSON object/],
      ["payload=%7B%22n%22%3A12345678901234567890%7D", "payload", /more digits than a 64-bit float keeps/],
      ["id=01a", "id", /at least its first 4 hexadecimal digits/],
      ["id=----", "id", /at least its first 4 hexadecimal digits/],
      ["id=zzzz", "id", /at least its first 4 hexadecimal digits/],
      ["error=", "error", /too small/i],
      ["limit=0", "limit", /whole number from 1 to 1000/],
    ];
    for (const [params, path, message] of cases) {
      for (const route of ["/v1/jobs", "/v1/jobs/count"]) {
        if (route === "/v1/jobs/count" && path === "limit") continue;
        const problem = expectProblem(await call(test.app, { url: `${route}?${params}`, key: test.keys.admin }), 400, "INVALID_PARAMETER");
        expect(problem.errors.map((issue: { path: string }) => issue.path), `${route}?${params}`).toEqual([path]);
        expect(problem.errors[0].message, `${route}?${params}`).toMatch(message);
        expect(problem.detail).toContain(path);
      }
    }
    // A cursor belongs to the list, not the count.
    expectProblem(await call(test.app, { url: "/v1/jobs/count?limit=5", key: test.keys.admin }), 400, "INVALID_PARAMETER");
    expect(await rows(test, "SELECT md5(string_agg(j::text, '|' ORDER BY j.id)) AS digest FROM {{schema}}.jobs AS j")).toEqual(before);
  });
});

describe("GET /v1/overview", () => {
  it("answers the overview's JSON for an admin key, every count flagged", async () => {
    const response = await call(test.app, { url: "/v1/overview", key: test.keys.admin });
    expect(response.statusCode, response.body).toBe(200);
    const body = response.json;
    expect(Object.keys(body).sort()).toEqual(
      ["at", "tenant", "exactCountLimit", "windowMs", "queues", "kinds", "oldestReadyJob", "stuck", "topErrors", "workers", "incomplete"].sort(),
    );
    expect(body).toMatchObject({ tenant: null, exactCountLimit: 1000, windowMs: 900_000, incomplete: [], kinds: [], topErrors: [], workers: [] });
    expect(new Date(body.at).toISOString()).toBe(body.at);
    expect(body.queues.map((queue: { queue: string }) => queue.queue)).toEqual(["billing", "mail", "reports"]);
    const mail = body.queues.find((queue: { queue: string }) => queue.queue === "mail");
    expect(Object.keys(mail).sort()).toEqual(["counts", "estimated", "oldestReadyAgeMs", "oldestReadyJob", "paused", "queue", "recent"]);
    expect(mail.counts.dead).toBe(jobs.filter((job) => job.queue === "mail" && job.status === "dead").length);
    expect(mail.estimated).toEqual({ waiting: false, queued: false, running: false, retrying: false, sleeping: false, succeeded: false, cancelled: false, dead: false });
    expect(mail.recent).toEqual({ succeeded: 0, failed: 0, failureRate: null });
    expect(body.oldestReadyJob).toMatchObject({ id: jobs[1]!.id, queue: jobs[1]!.queue, kind: jobs[1]!.kind, tenant: jobs[1]!.tenant });
    expect(body.stuck.count).toBe(3);
    expect(Object.keys(body.stuck.jobs[0]).sort()).toEqual(["expiredMs", "id", "kind", "queue", "tenant", "workerId"]);
  });

  it("gives a tenant key its own tenant's overview", async () => {
    const response = await call(test.app, { url: "/v1/overview", key: test.keys.globex });
    expect(response.statusCode).toBe(200);
    expect(response.json.tenant).toBe("globex");
    const total = response.json.queues.reduce((sum: number, queue: { counts: Record<string, number> }) => sum + Object.values(queue.counts).reduce((a, b) => a + b, 0), 0);
    expect(total).toBe(jobs.filter((job) => job.tenant === "globex").length);
    expect(response.json.stuck.jobs.every((job: { tenant: string }) => job.tenant === "globex")).toBe(true);
    expect(response.json.oldestReadyJob.tenant).toBe("globex");
  });

  it("lists estimated flags in GET /v1/queues too", async () => {
    const response = await call(test.app, { url: "/v1/queues", key: test.keys.admin });
    expect(response.statusCode).toBe(200);
    for (const queue of response.json.items) expect(Object.values(queue.estimated)).toEqual([false, false, false, false, false, false, false, false]);
  });
});

describe("a search past the time bound", () => {
  let bounded: TestConveyor;
  let locker: pg.Client;
  beforeAll(async () => {
    bounded = await createTestConveyor({ logger: silent, schema: test.schema, searchTimeoutMs: 300 });
    locker = await connectTestClient();
  });
  afterAll(async () => {
    await locker?.end();
    await bounded?.cleanup();
  });

  it("is answered 422 SEARCH_TIMEOUT, saying how to narrow it", async () => {
    const app = await buildApp(bounded.conveyor, { logger: silent });
    try {
      await locker.query("BEGIN");
      await locker.query(`LOCK TABLE ${quoteIdent(test.schema)}.jobs IN ACCESS EXCLUSIVE MODE`);
      let response;
      try {
        response = await call(app, { url: "/v1/jobs?error=timeout", key: test.keys.admin });
      } finally {
        await locker.query("COMMIT");
      }
      const problem = expectProblem(response, 422, "SEARCH_TIMEOUT");
      expect(problem.timeoutMs).toBe(300);
      expect(problem.detail).toBe(
        "the search did not finish within 300 ms (searchTimeoutMs): narrow it by queue, kind, status or a time range (createdAfter, createdBefore)",
      );
    } finally {
      await app.close();
    }
  });
});
