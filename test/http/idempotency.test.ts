import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ApiTest, call, createApiTest, expectProblem, rows } from "./support.js";

let test: ApiTest;
beforeAll(async () => {
  test = await createApiTest();
});
afterAll(() => test.cleanup());

const post = (key: string, body: unknown, idempotencyKey?: string) =>
  call(test.app, {
    method: "POST",
    url: "/v1/jobs",
    key,
    body,
    headers: idempotencyKey === undefined ? {} : { "idempotency-key": idempotencyKey },
  });

const countWithKey = async (key: string) =>
  (await rows(test, "SELECT count(*)::int AS n FROM {{schema}}.jobs WHERE idempotency_key = $1", [key]))[0].n;

describe("Idempotency-Key", () => {
  it("answers 201 the first time and 200 with the same job after, for the same request", async () => {
    const body = { kind: "email.send", payload: { to: "ada@example.com", subject: "hi" } };
    const first = await post(test.keys.acme, body, "welcome-ada");
    expect(first.statusCode).toBe(201);
    const again = await post(test.keys.acme, body, "welcome-ada");
    expect(again.statusCode).toBe(200);
    expect(again.json).toEqual(first.json);
    expect(again.headers.location).toBeUndefined();
    expect(await countWithKey("welcome-ada")).toBe(1);
  });

  it("treats payloads that parse to the same value as the same request (key order, schema transforms)", async () => {
    const first = await post(test.keys.acme, { kind: "email.send", payload: { to: "Grace@Example.com", subject: "s" } }, "grace");
    const reordered = await post(test.keys.acme, { payload: { subject: "s", to: "  grace@example.com" }, kind: "email.send" }, "grace");
    expect(first.statusCode).toBe(201);
    expect(reordered.statusCode).toBe(200);
    expect(reordered.json.id).toBe(first.json.id);
  });

  it("answers 409 when the key was used with a different request, and changes nothing", async () => {
    const original = await post(test.keys.acme, { kind: "item", payload: { n: 1 }, priority: 3 }, "order-1");
    expect(original.statusCode).toBe(201);
    const differences = [
      { kind: "item", payload: { n: 2 }, priority: 3 },
      { kind: "any.value", payload: { value: 1 }, priority: 3 },
      { kind: "item", payload: { n: 1 }, priority: 4 },
      { kind: "item", payload: { n: 1 }, priority: 3, queue: "elsewhere" },
      { kind: "item", payload: { n: 1 }, priority: 3, maxAttempts: 2 },
    ];
    for (const body of differences) {
      const problem = expectProblem(await post(test.keys.acme, body, "order-1"), 409, "IDEMPOTENCY_CONFLICT");
      expect(problem.detail, JSON.stringify(body)).toContain('idempotency key "order-1"');
    }
    expect(await countWithKey("order-1")).toBe(1);
    const stored = await call(test.app, { url: `/v1/jobs/${original.json.id}`, key: test.keys.acme });
    expect(stored.json).toMatchObject({ payload: { n: 1 }, priority: 3, kind: "item" });
  });

  it("settles concurrent requests with one key on one job: one 201, the rest 200", async () => {
    const body = { kind: "item", payload: { n: 7 } };
    const responses = await Promise.all(Array.from({ length: 20 }, () => post(test.keys.acme, body, "race")));
    const statuses = responses.map((response) => response.statusCode).sort();
    expect(statuses.filter((status) => status === 201)).toHaveLength(1);
    expect(statuses.filter((status) => status === 200)).toHaveLength(19);
    expect(new Set(responses.map((response) => response.json.id)).size).toBe(1);
    expect(await countWithKey("race")).toBe(1);
  });

  it("settles concurrent different requests with one key: one job, the others 409", async () => {
    const responses = await Promise.all(Array.from({ length: 10 }, (_, n) => post(test.keys.acme, { kind: "item", payload: { n } }, "contested")));
    const created = responses.filter((response) => response.statusCode === 201);
    expect(created).toHaveLength(1);
    for (const response of responses.filter((r) => r.statusCode !== 201)) expectProblem(response, 409, "IDEMPOTENCY_CONFLICT");
    expect(await countWithKey("contested")).toBe(1);
  });

  it("scopes keys per tenant: the same key in two tenants makes two jobs", async () => {
    const body = { kind: "item", payload: { n: 1 } };
    const acme = await post(test.keys.acme, body, "shared-key");
    const globex = await post(test.keys.globex, body, "shared-key");
    expect([acme.statusCode, globex.statusCode]).toEqual([201, 201]);
    expect(acme.json.id).not.toBe(globex.json.id);
    expect([acme.json.tenant, globex.json.tenant]).toEqual(["acme", "globex"]);
  });

  it("refuses a key with control characters or over 255 characters (400)", async () => {
    expectProblem(await post(test.keys.acme, { kind: "item", payload: { n: 1 } }, "x".repeat(256)), 400, "INVALID_PARAMETER");
    expectProblem(await post(test.keys.acme, { kind: "item", payload: { n: 1 } }, "tab\there"), 400, "INVALID_PARAMETER");
  });

  it("applies per-item keys in a batch, all or nothing when one conflicts", async () => {
    const first = await call(test.app, {
      method: "POST",
      url: "/v1/jobs/batch",
      key: test.keys.acme,
      body: { jobs: [{ kind: "item", payload: { n: 1 }, idempotencyKey: "b-1" }, { kind: "item", payload: { n: 2 }, idempotencyKey: "b-2" }] },
    });
    expect(first.statusCode).toBe(201);
    const repeat = await call(test.app, {
      method: "POST",
      url: "/v1/jobs/batch",
      key: test.keys.acme,
      body: {
        jobs: [
          { kind: "item", payload: { n: 1 }, idempotencyKey: "b-1" },
          { kind: "item", payload: { n: 3 }, idempotencyKey: "b-3" },
        ],
      },
    });
    expect(repeat.statusCode).toBe(201);
    expect(repeat.json.jobs[0].id).toBe(first.json.jobs[0].id);
    expect(repeat.json.outcomes).toEqual(["existing", "created"]);
    const conflicting = await call(test.app, {
      method: "POST",
      url: "/v1/jobs/batch",
      key: test.keys.acme,
      body: {
        jobs: [
          { kind: "item", payload: { n: 4 }, idempotencyKey: "b-4" },
          { kind: "item", payload: { n: 2 }, idempotencyKey: "b-2", priority: 9 },
        ],
      },
    });
    expect(expectProblem(conflicting, 409, "IDEMPOTENCY_CONFLICT").detail).toContain("jobs[1]");
    expect(await countWithKey("b-4")).toBe(0); // rolled back with the batch
    const differentPayload = await call(test.app, {
      method: "POST",
      url: "/v1/jobs/batch",
      key: test.keys.acme,
      body: { jobs: [{ kind: "item", payload: { n: 5 }, idempotencyKey: "b-5" }, { kind: "item", payload: { n: 99 }, idempotencyKey: "b-1" }] },
    });
    expectProblem(differentPayload, 409, "IDEMPOTENCY_CONFLICT");
    expect(await countWithKey("b-5")).toBe(0);
  });

  it("refuses two batch items with one key and different requests, not only different payloads", async () => {
    const response = await call(test.app, {
      method: "POST",
      url: "/v1/jobs/batch",
      key: test.keys.acme,
      body: {
        jobs: [
          { kind: "item", payload: { n: 1 }, idempotencyKey: "twice" },
          { kind: "item", payload: { n: 1 }, idempotencyKey: "twice", queue: "elsewhere" },
        ],
      },
    });
    const problem = expectProblem(response, 409, "IDEMPOTENCY_CONFLICT");
    expect(problem.detail).toContain("different queue");
    expect(problem.idempotencyKey).toBe("twice");
    expect(await countWithKey("twice")).toBe(0);
  });

  it("refuses the Idempotency-Key header on a batch (400) rather than ignoring it", async () => {
    const response = await call(test.app, {
      method: "POST",
      url: "/v1/jobs/batch",
      key: test.keys.acme,
      headers: { "idempotency-key": "whole-batch" },
      body: { jobs: [{ kind: "item", payload: { n: 1 } }] },
    });
    expect(expectProblem(response, 400, "INVALID_PARAMETER").detail).toMatch(/give each job its own idempotencyKey/);
  });
});
