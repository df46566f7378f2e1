import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startApiServer, type ApiServer } from "../../src/http/server.js";
import { type ApiTest, createApiTest, expectNoInternals, silent } from "./support.js";

let test: ApiTest;
let server: ApiServer;
beforeAll(async () => {
  test = await createApiTest();
  server = await startApiServer(test.conveyor, { port: 0, host: "127.0.0.1", logger: silent, bodyLimit: 256 * 1024 });
});
afterAll(async () => {
  await server.close();
  await test.cleanup();
});

const request = (path: string, init: RequestInit & { key?: string } = {}) => {
  const headers = new Headers(init.headers);
  if (init.key) headers.set("authorization", `Bearer ${init.key}`);
  if (typeof init.body === "string") headers.set("content-type", "application/json");
  return fetch(`${server.url}${path}`, { ...init, headers });
};

describe("over a real port", () => {
  it("binds where asked and serves the API", async () => {
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(server.port).toBeGreaterThan(0);
    const health = await request("/healthz");
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: "ok" });
  });

  it("creates, reads and cancels a job; errors are problem+json with the request id", async () => {
    const created = await request("/v1/jobs", {
      method: "POST",
      key: test.keys.acme,
      body: JSON.stringify({ kind: "item", payload: { n: 1 }, delayMs: 60_000 }),
      headers: { "x-request-id": "over-the-wire-1" },
    });
    expect(created.status).toBe(201);
    expect(created.headers.get("x-request-id")).toBe("over-the-wire-1");
    const job = (await created.json()) as { id: string };
    expect(created.headers.get("location")).toBe(`/v1/jobs/${job.id}`);
    const read = await request(`/v1/jobs/${job.id}`, { key: test.keys.acme });
    expect(((await read.json()) as { id: string }).id).toBe(job.id);
    const cancelled = await request(`/v1/jobs/${job.id}/cancel`, { method: "POST", key: test.keys.acme });
    expect(cancelled.status).toBe(200);
    const again = await request(`/v1/jobs/${job.id}/cancel`, { method: "POST", key: test.keys.acme });
    expect(again.status).toBe(409);
    expect(again.headers.get("content-type")).toMatch(/^application\/problem\+json/);
    const problem = await again.json();
    expect(problem).toMatchObject({ status: 409, code: "ALREADY_TERMINAL", requestId: again.headers.get("x-request-id") });
    const foreign = await request(`/v1/jobs/${job.id}`, { key: test.keys.globex });
    expect(foreign.status).toBe(404);
    const unauthenticated = await request("/v1/jobs");
    expect(unauthenticated.status).toBe(401);
    expect(unauthenticated.headers.get("www-authenticate")).toBe('Bearer realm="conveyor"');
  });

  it("answers 413 for a body over the limit and keeps serving", async () => {
    const body = JSON.stringify({ kind: "any.value", payload: { value: "x".repeat(300 * 1024) } });
    const response = await request("/v1/jobs", { method: "POST", key: test.keys.acme, body });
    expect(response.status).toBe(413);
    const text = await response.text();
    expect(JSON.parse(text)).toMatchObject({ code: "PAYLOAD_TOO_LARGE", detail: "request body is larger than the limit of 262144 bytes" });
    expectNoInternals(text);
    expect((await request("/healthz")).status).toBe(200);
  });

  it("settles 30 concurrent requests with one idempotency key on one job over separate connections", async () => {
    const body = JSON.stringify({ kind: "item", payload: { n: 99 } });
    const responses = await Promise.all(
      Array.from({ length: 30 }, () => request("/v1/jobs", { method: "POST", key: test.keys.acme, body, headers: { "idempotency-key": "wire-race" } })),
    );
    const statuses = responses.map((response) => response.status);
    expect(statuses.filter((status) => status === 201)).toHaveLength(1);
    expect(statuses.filter((status) => status === 200)).toHaveLength(29);
    const ids = new Set(await Promise.all(responses.map(async (response) => ((await response.json()) as { id: string }).id)));
    expect(ids.size).toBe(1);
  });

  it("serves the OpenAPI document, Swagger UI and metrics", async () => {
    expect(((await (await request("/openapi.json")).json()) as { openapi: string }).openapi).toBe("3.1.0");
    expect((await request("/docs")).headers.get("content-type")).toMatch(/^text\/html/);
    expect(await (await request("/metrics")).text()).toContain("conveyor_http_requests_total");
  });
});
