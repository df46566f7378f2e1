import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_BATCH_JOBS } from "../../packages/core/src/core/defaults.js";
import { type ApiTest, call, createApiTest, expectProblem, JOB_FIELDS, rows } from "./support.js";

let test: ApiTest;
beforeAll(async () => {
  test = await createApiTest();
});
afterAll(() => test.cleanup());

const post = (body: unknown, headers?: Record<string, string>) =>
  call(test.app, { method: "POST", url: "/v1/jobs", key: test.keys.acme, body, headers });

describe("POST /v1/jobs", () => {
  it("creates a job: 201, Location, exactly the documented fields, the schema's parsed payload", async () => {
    const response = await post({ kind: "email.send", payload: { to: "  Ada@Example.COM " } });
    expect(response.statusCode).toBe(201);
    expect(response.headers["content-type"]).toMatch(/^application\/json/);
    const job = response.json;
    expect(Object.keys(job).sort()).toEqual(JOB_FIELDS);
    expect(response.headers.location).toBe(`/v1/jobs/${job.id}`);
    expect(job).toMatchObject({
      tenant: "acme",
      kind: "email.send",
      queue: "mail",
      payload: { to: "ada@example.com", subject: "(no subject)" },
      status: "queued",
      priority: 5,
      attempts: 0,
      maxAttempts: 7,
      lastError: null,
      cancelRequested: false,
      startedAt: null,
      finishedAt: null,
    });
    for (const field of ["runAt", "createdAt", "updatedAt"]) expect(new Date(job[field]).toISOString()).toBe(job[field]);
    const [row] = await rows(test, "SELECT tenant, payload FROM {{schema}}.jobs WHERE id = $1", [job.id]);
    expect(row).toEqual({ tenant: "acme", payload: { to: "ada@example.com", subject: "(no subject)" } });
  });

  it("applies queue, priority, maxAttempts and runAt", async () => {
    const runAt = "2099-01-02T03:04:05.678+02:00";
    const response = await post({ kind: "item", payload: { n: 1 }, queue: "bulk", priority: -7, maxAttempts: 3, runAt });
    expect(response.statusCode).toBe(201);
    expect(response.json).toMatchObject({ queue: "bulk", priority: -7, maxAttempts: 3, runAt: "2099-01-02T01:04:05.678Z" });
  });

  it("applies delayMs by the database clock", async () => {
    const [{ now }] = await rows(test, "SELECT now() AS now");
    const response = await post({ kind: "item", payload: { n: 2 }, delayMs: 3_600_000 });
    expect(response.statusCode).toBe(201);
    expect(new Date(response.json.runAt).getTime()).toBeGreaterThanOrEqual(now.getTime() + 3_600_000);
  });

  it("refuses an unknown kind with 422 and writes nothing", async () => {
    const before = await rows(test, "SELECT count(*)::int AS n FROM {{schema}}.jobs");
    const problem = expectProblem(await post({ kind: "no.such.kind", payload: {} }), 422, "VALIDATION");
    expect(problem.detail).toContain('unknown job kind "no.such.kind"');
    expect(problem.errors).toEqual([{ path: "kind", message: "unknown job kind" }]);
    expect(await rows(test, "SELECT count(*)::int AS n FROM {{schema}}.jobs")).toEqual(before);
  });

  it("refuses a payload failing the kind's schema with 422 naming the path", async () => {
    const problem = expectProblem(await post({ kind: "email.send", payload: { to: "not an email" } }), 422, "VALIDATION");
    expect(problem.detail).toMatch(/payload\.to: Invalid email/);
    expect(problem.errors).toEqual([{ path: "payload.to", message: expect.stringMatching(/Invalid email/) }]);
    const nested = expectProblem(await post({ kind: "item", payload: { n: "seven" } }), 422, "VALIDATION");
    expect(nested.errors[0].path).toBe("payload.n");
  });

  it("refuses bad fields with 422 naming each: types, ranges, unknown fields, runAt garbage, runAt with delayMs", async () => {
    const cases: Array<[unknown, RegExp]> = [
      [{ kind: "item", payload: { n: 1 }, priority: "high" }, /priority/],
      [{ kind: "item", payload: { n: 1 }, priority: 5000 }, /priority/],
      [{ kind: "item", payload: { n: 1 }, priority: 1.5 }, /priority/],
      [{ kind: "item", payload: { n: 1 }, maxAttempts: 0 }, /maxAttempts/],
      [{ kind: "item", payload: { n: 1 }, delayMs: -1 }, /delayMs/],
      [{ kind: "item", payload: { n: 1 }, runAt: "next tuesday" }, /runAt/],
      [{ kind: "item", payload: { n: 1 }, runAt: "2024-02-30T00:00:00Z" }, /runAt/],
      [{ kind: "item", payload: { n: 1 }, runAt: "2024-01-01T00:00:00" }, /runAt/], // no zone: ambiguous
      [{ kind: "item", payload: { n: 1 }, runAt: "2099-01-01T00:00:00Z", delayMs: 5 }, /runAt or delayMs/],
      [{ kind: "item", payload: { n: 1 }, queue: "bad queue!" }, /queue/],
      [{ kind: "item", payload: { n: 1 }, delay: 5 }, /delay/],
      [{ kind: "item" }, /payload/],
      [{ payload: { n: 1 } }, /kind/],
      [[1, 2], /body/],
      ["just a string", /body/],
    ];
    for (const [body, pattern] of cases) {
      const response = await post(typeof body === "string" ? JSON.stringify(body) : body, { "content-type": "application/json" });
      const problem = expectProblem(response, 422, "VALIDATION");
      expect(problem.detail, JSON.stringify(body)).toMatch(pattern);
    }
  });

  it("refuses a missing body with 422 and a body that is not JSON with 400 or 415", async () => {
    expectProblem(await call(test.app, { method: "POST", url: "/v1/jobs", key: test.keys.acme }), 422, "VALIDATION");
    const malformed = await post('{"kind": "item", "payload": {', { "content-type": "application/json" });
    expect(expectProblem(malformed, 400, "MALFORMED_REQUEST").detail).toMatch(/not valid JSON/);
    const text = await post("kind=item", { "content-type": "text/plain" });
    expectProblem(text, 415, "UNSUPPORTED_MEDIA_TYPE");
  });
});

describe("POST /v1/jobs/batch", () => {
  it("creates every job in order: 201 { jobs }", async () => {
    const jobs = Array.from({ length: 5 }, (_, n) => ({ kind: "item", payload: { n }, priority: n }));
    const response = await call(test.app, { method: "POST", url: "/v1/jobs/batch", key: test.keys.acme, body: { jobs } });
    expect(response.statusCode).toBe(201);
    expect(response.json.jobs.map((job: { payload: unknown }) => job.payload)).toEqual(jobs.map((job) => job.payload));
    expect(response.json.jobs.every((job: { tenant: string }) => job.tenant === "acme")).toBe(true);
    expect(Object.keys(response.json.jobs[0]).sort()).toEqual(JOB_FIELDS);
  });

  it("is all or nothing: one bad item refuses the batch (422 naming it) and writes nothing", async () => {
    const before = await rows(test, "SELECT count(*)::int AS n FROM {{schema}}.jobs");
    const jobs = [
      { kind: "item", payload: { n: 1 } },
      { kind: "item", payload: { n: 2 } },
      { kind: "email.send", payload: { to: "nope" } },
    ];
    const problem = expectProblem(await call(test.app, { method: "POST", url: "/v1/jobs/batch", key: test.keys.acme, body: { jobs } }), 422, "VALIDATION");
    expect(problem.detail).toContain("jobs[2]");
    expect(problem.errors[0].path).toBe("jobs.2.payload.to");
    expect(await rows(test, "SELECT count(*)::int AS n FROM {{schema}}.jobs")).toEqual(before);
  });

  it(`refuses more than MAX_BATCH_JOBS (${MAX_BATCH_JOBS}) jobs and an empty batch`, async () => {
    const jobs = Array.from({ length: MAX_BATCH_JOBS + 1 }, (_, n) => ({ kind: "item", payload: { n } }));
    const tooMany = await call(test.app, { method: "POST", url: "/v1/jobs/batch", key: test.keys.acme, body: { jobs } });
    expect(expectProblem(tooMany, 422, "VALIDATION").detail).toMatch(/jobs/);
    expectProblem(await call(test.app, { method: "POST", url: "/v1/jobs/batch", key: test.keys.acme, body: { jobs: [] } }), 422, "VALIDATION");
  });

  it(`accepts exactly MAX_BATCH_JOBS (${MAX_BATCH_JOBS})`, async () => {
    const jobs = Array.from({ length: MAX_BATCH_JOBS }, (_, n) => ({ kind: "item", payload: { n }, queue: "full-batch" }));
    const response = await call(test.app, { method: "POST", url: "/v1/jobs/batch", key: test.keys.acme, body: { jobs } });
    expect(response.statusCode).toBe(201);
    expect(response.json.jobs).toHaveLength(MAX_BATCH_JOBS);
    expect(await rows(test, "SELECT count(*)::int AS n FROM {{schema}}.jobs WHERE queue = 'full-batch'")).toEqual([{ n: MAX_BATCH_JOBS }]);
  });
});

describe("GET /v1/jobs/{id}", () => {
  it("answers the job with its executions and requeues", async () => {
    const created = (await post({ kind: "item", payload: { n: 42 } })).json;
    const response = await call(test.app, { url: `/v1/jobs/${created.id}`, key: test.keys.acme });
    expect(response.statusCode).toBe(200);
    expect(Object.keys(response.json).sort()).toEqual([...JOB_FIELDS, "executions", "requeues"].sort());
    expect(response.json).toMatchObject({ ...created, updatedAt: expect.any(String), executions: [], requeues: [] });
  });

  it("answers 404 for a missing job and 400 for an id that is not a UUID", async () => {
    const missing = await call(test.app, { url: "/v1/jobs/0190f5c2-0000-7000-8000-000000000000", key: test.keys.acme });
    expect(expectProblem(missing, 404, "NOT_FOUND").detail).toBe("job 0190f5c2-0000-7000-8000-000000000000 not found");
    const bad = expectProblem(await call(test.app, { url: "/v1/jobs/42", key: test.keys.acme }), 400, "INVALID_PARAMETER");
    expect(bad.errors).toEqual([{ path: "id", message: "must be a UUID" }]);
    expectProblem(await call(test.app, { url: "/v1/jobs/'%20OR%201=1", key: test.keys.acme }), 400, "INVALID_PARAMETER");
  });
});

describe("GET /v1/jobs", () => {
  it("filters by status, kind and queue, newest first", async () => {
    const a = (await post({ kind: "item", payload: { n: 100 }, queue: "filters" })).json;
    const b = (await post({ kind: "any.value", payload: { value: 1 }, queue: "filters" })).json;
    const c = (await post({ kind: "item", payload: { n: 101 }, queue: "filters" })).json;
    await call(test.app, { method: "POST", url: `/v1/jobs/${c.id}/cancel`, key: test.keys.acme });
    const list = async (query: string) => (await call(test.app, { url: `/v1/jobs?queue=filters${query}`, key: test.keys.acme })).json;
    expect((await list("")).items.map((job: { id: string }) => job.id)).toEqual([c.id, b.id, a.id]);
    expect((await list("&kind=item")).items.map((job: { id: string }) => job.id)).toEqual([c.id, a.id]);
    expect((await list("&status=cancelled")).items.map((job: { id: string }) => job.id)).toEqual([c.id]);
    expect((await list("&status=queued&kind=item")).items.map((job: { id: string }) => job.id)).toEqual([a.id]);
    const page = await list("&limit=2");
    expect(page.items).toHaveLength(2);
    expect(typeof page.nextCursor).toBe("string");
    expect(Object.keys(page.items[0]).sort()).toEqual(JOB_FIELDS);
  });

  it("takes the integer limit as the query string's digits: ?limit=1000 and ?limit=1", async () => {
    for (const limit of [1, 1000]) {
      const response = await call(test.app, { url: `/v1/jobs?limit=${limit}`, key: test.keys.acme });
      expect(response.statusCode, response.body).toBe(200);
      expect(response.json.items.length).toBeLessThanOrEqual(limit);
    }
  });

  it("answers 400 for bad query parameters, naming them", async () => {
    const cases: Array<[string, string]> = [
      ["status=finished", "status"],
      ["limit=0", "limit"],
      ["limit=1001", "limit"],
      ["limit=ten", "limit"],
      ["limit=2.5", "limit"],
      ["limit=-1", "limit"],
      ["limit=", "limit"],
      ["limit=5&limit=6", "limit"],
      ["cursor=not-a-cursor", "cursor"],
      ["colour=red", "colour"],
      ["kind=%00", "kind"],
      ["status=queued&status=running", "status"],
    ];
    for (const [query, path] of cases) {
      const problem = expectProblem(await call(test.app, { url: `/v1/jobs?${query}`, key: test.keys.acme }), 400, "INVALID_PARAMETER");
      expect(problem.errors.map((issue: { path: string }) => issue.path), query).toContain(path);
    }
  });
});
