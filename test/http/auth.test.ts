import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { API_KEY_PREFIX, hashApiKey } from "../../packages/core/src/client/api-keys.js";
import { ConflictError, ValidationError } from "../../packages/core/src/index.js";
import { type ApiTest, call, createApiTest, expectProblem, rows } from "./support.js";

let test: ApiTest;
beforeAll(async () => {
  test = await createApiTest();
});
afterAll(() => test.cleanup());

const V1_ROUTES: Array<{ method: "GET" | "POST" | "DELETE"; url: string }> = [
  { method: "POST", url: "/v1/jobs" },
  { method: "POST", url: "/v1/jobs/batch" },
  { method: "GET", url: "/v1/jobs" },
  { method: "GET", url: "/v1/jobs/0190f5c2-0000-7000-8000-000000000000" },
  { method: "POST", url: "/v1/jobs/0190f5c2-0000-7000-8000-000000000000/cancel" },
  { method: "GET", url: "/v1/dead-letters" },
  { method: "GET", url: "/v1/dead-letters/0190f5c2-0000-7000-8000-000000000000" },
  { method: "POST", url: "/v1/dead-letters/0190f5c2-0000-7000-8000-000000000000/requeue" },
  { method: "DELETE", url: "/v1/dead-letters/0190f5c2-0000-7000-8000-000000000000" },
  { method: "GET", url: "/v1/jobs/0190f5c2-0000-7000-8000-000000000000/dependencies" },
  { method: "GET", url: "/v1/jobs/0190f5c2-0000-7000-8000-000000000000/steps" },
  { method: "POST", url: "/v1/jobs/0190f5c2-0000-7000-8000-000000000000/resume" },
  { method: "POST", url: "/v1/jobs/0190f5c2-0000-7000-8000-000000000000/rerun" },
  { method: "POST", url: "/v1/events" },
  { method: "POST", url: "/v1/flows" },
  { method: "POST", url: "/v1/batches" },
  { method: "GET", url: "/v1/flows" },
  { method: "GET", url: "/v1/flows/0190f5c2-0000-7000-8000-000000000000" },
  { method: "POST", url: "/v1/flows/0190f5c2-0000-7000-8000-000000000000/cancel" },
  { method: "GET", url: "/v1/queues" },
  { method: "GET", url: "/v1/workers" },
  { method: "GET", url: "/v1/me" },
];

describe("API keys", () => {
  it("are required on every /v1 route: 401 problem with a Bearer challenge, before the body is even read", async () => {
    for (const route of V1_ROUTES) {
      const response = await call(test.app, { ...route, body: route.method === "POST" ? "{ not json" : undefined, headers: { "content-type": "application/json" } });
      const problem = expectProblem(response, 401, "UNAUTHORIZED");
      expect(problem.detail).toMatch(/missing Authorization header/);
      expect(response.headers["www-authenticate"]).toBe('Bearer realm="conveyor"');
    }
  });

  it("refuse malformed headers, wrong keys and other schemes", async () => {
    const cases = [
      { authorization: "Basic dXNlcjpwYXNz", detail: /must be Bearer/ },
      { authorization: "Bearer", detail: /must be Bearer/ },
      { authorization: "Bearer a b", detail: /must be Bearer/ },
      { authorization: `Bearer ${API_KEY_PREFIX}wrong`, detail: /not valid or has been revoked/ },
      { authorization: `Bearer ${test.keys.acme}x`, detail: /not valid or has been revoked/ },
      { authorization: `Bearer ${test.keys.acme.slice(0, -1)}`, detail: /not valid or has been revoked/ },
      { authorization: "Bearer not-even-our-format", detail: /not valid or has been revoked/ },
    ];
    for (const { authorization, detail } of cases) {
      const response = await call(test.app, { url: "/v1/jobs", headers: { authorization } });
      expect(expectProblem(response, 401, "UNAUTHORIZED").detail, authorization).toMatch(detail);
      expect(response.headers["www-authenticate"]).toMatch(/^Bearer realm="conveyor"/);
    }
  });

  it("are told apart by GET /v1/me: the key's id, its tenant and whether it is an admin key", async () => {
    const acme = await call(test.app, { url: "/v1/me", key: test.keys.acme });
    expect(acme.statusCode, acme.body).toBe(200);
    expect(acme.json).toEqual({ keyId: expect.any(String), tenant: "acme", admin: false });
    const admin = await call(test.app, { url: "/v1/me", key: test.keys.admin });
    expect(admin.json).toMatchObject({ admin: true });
    expect(admin.json.keyId).not.toBe(acme.json.keyId);
  });

  it("accept the scheme in any case", async () => {
    const response = await call(test.app, { url: "/v1/jobs", headers: { authorization: `bearer ${test.keys.acme}` } });
    expect(response.statusCode).toBe(200);
  });

  it("stop working as soon as they are revoked", async () => {
    const { key, record } = await test.apiKeys.create({ tenant: "acme", name: "short-lived" });
    expect((await call(test.app, { url: "/v1/jobs", key })).statusCode).toBe(200);
    const revoked = await test.apiKeys.revoke(record.id);
    expect(revoked.revokedAt).toBeInstanceOf(Date);
    const response = await call(test.app, { url: "/v1/jobs", key });
    expect(expectProblem(response, 401, "UNAUTHORIZED").detail).toMatch(/revoked/);
    // Revoking twice keeps the first time.
    expect((await test.apiKeys.revoke(record.id)).revokedAt).toEqual(revoked.revokedAt);
  });

  it("can be imported: a key chosen outside works like a created one, once; a malformed one is refused", async () => {
    const key = `${API_KEY_PREFIX}imported-key-0123456789abcdef`;
    const record = await test.apiKeys.import(key, { tenant: "acme", name: "imported" });
    expect(record).toMatchObject({ tenant: "acme", admin: false, name: "imported", prefix: key.slice(0, API_KEY_PREFIX.length + 8) });
    expect((await call(test.app, { url: "/v1/jobs", key })).statusCode).toBe(200);
    await expect(test.apiKeys.import(key)).rejects.toThrow(ConflictError);
    await expect(test.apiKeys.import("not-a-key")).rejects.toThrow(ValidationError);
    await expect(test.apiKeys.import(`${API_KEY_PREFIX}short`)).rejects.toThrow(ValidationError);
  });

  it("are stored as a SHA-256 hash with a short prefix, never in clear; last use is recorded", async () => {
    const { key, record } = await test.apiKeys.create({ tenant: "acme", admin: true, name: "audit" });
    expect(key.startsWith(API_KEY_PREFIX)).toBe(true);
    expect(key.length).toBeGreaterThanOrEqual(API_KEY_PREFIX.length + 43); // 32 random bytes, base64url
    expect(record).toMatchObject({ tenant: "acme", admin: true, name: "audit", prefix: key.slice(0, 12), lastUsedAt: null, revokedAt: null });
    const [stored] = await rows(test, "SELECT * FROM {{schema}}.api_keys WHERE id = $1", [record.id]);
    expect(Buffer.compare(stored.key_hash, hashApiKey(key))).toBe(0);
    expect(JSON.stringify(Object.values(stored))).not.toContain(key.slice(12));
    await call(test.app, { url: "/v1/jobs", key });
    const listed = (await test.apiKeys.list()).find((entry) => entry.id === record.id)!;
    expect(listed.lastUsedAt).toBeInstanceOf(Date);
  });

  it("are not needed for health, readiness, metrics and the OpenAPI document", async () => {
    for (const url of ["/healthz", "/readyz", "/metrics", "/openapi.json", "/docs"]) {
      expect((await call(test.app, { url })).statusCode, url).toBe(200);
    }
  });
});
