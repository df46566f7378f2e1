import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_HTTP_PATH_SEGMENT_LENGTH } from "../../packages/core/src/core/defaults.js";
import { startApiServer, type ApiServer } from "../../packages/http/src/server.js";
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

  it("answers the framework's refusals (404, 415, malformed JSON, 413) with instance and requestId", async () => {
    const cases: Array<[number, string, RequestInit & { key?: string }]> = [
      [404, "/v2/jobs?x=1", {}],
      [415, "/v1/jobs", { method: "POST", key: test.keys.acme, body: new Blob(["<job/>"], { type: "application/xml" }) }],
      [400, "/v1/jobs", { method: "POST", key: test.keys.acme, body: "{" }],
      [413, "/v1/jobs", { method: "POST", key: test.keys.acme, body: JSON.stringify({ kind: "item", payload: { n: "x".repeat(300 * 1024) } }) }],
    ];
    for (const [status, path, init] of cases) {
      const response = await request(path, init);
      expect(response.status, path).toBe(status);
      const problem = (await response.json()) as { instance?: string; requestId?: string };
      expect(problem.instance, `${status} ${path}`).toBe(path);
      expect(problem.requestId, `${status} ${path}`).toBe(response.headers.get("x-request-id"));
    }
  });

  it("serves the OpenAPI document, Swagger UI and metrics", async () => {
    expect(((await (await request("/openapi.json")).json()) as { openapi: string }).openapi).toBe("3.1.0");
    expect((await request("/docs")).headers.get("content-type")).toMatch(/^text\/html/);
    expect(await (await request("/metrics")).text()).toContain("conveyor_http_requests_total");
  });
});

/** Send raw bytes on a fresh connection; the answer's status, headers and body, read until the server closes or 2 s pass. */
function rawRequest(bytes: string): Promise<{ status: number; headers: Record<string, string>; body: string; text: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(server.port, "127.0.0.1");
    let text = "";
    const done = () => {
      clearTimeout(timer);
      socket.destroy();
      const [head = "", body = ""] = text.split("\r\n\r\n", 2);
      const [statusLine = "", ...lines] = head.split("\r\n");
      const headers = Object.fromEntries(lines.map((line) => [line.slice(0, line.indexOf(":")).toLowerCase(), line.slice(line.indexOf(":") + 1).trim()]));
      resolve({ status: Number(statusLine.split(" ")[1]), headers, body, text });
    };
    const timer = setTimeout(done, 2_000);
    socket.setEncoding("utf8");
    socket.on("data", (chunk: string) => {
      text += chunk;
      // A keep-alive answer is complete once its Content-Length bytes are in.
      const split = text.indexOf("\r\n\r\n");
      const length = /content-length: (\d+)/i.exec(text.slice(0, split))?.[1];
      if (split >= 0 && length !== undefined && Buffer.byteLength(text.slice(split + 4)) >= Number(length)) done();
    });
    socket.on("close", done);
    socket.on("error", (error: NodeJS.ErrnoException) => (error.code === "ECONNRESET" ? done() : reject(error)));
    socket.write(bytes);
  });
}

/**
 * An RFC 9457 problem with a fixed message: status, media type, code, the
 * request id (as the header says) and `instance` (the request's target, or
 * the id as a URN when the request line could not be read), and none of
 * `echoed` in it but in `instance`.
 */
function expectRawProblem(
  answer: Awaited<ReturnType<typeof rawRequest>>,
  status: number,
  detail: RegExp,
  echoed: string,
  instance: string | RegExp = /^urn:uuid:[0-9a-f-]{36}$/,
): Record<string, unknown> {
  expect(answer.status, answer.text.slice(0, 300)).toBe(status);
  expect(answer.headers["content-type"]).toMatch(/^application\/problem\+json/);
  const problem = JSON.parse(answer.body);
  expect(problem).toMatchObject({ type: "about:blank", status, code: status === 408 ? "TIMEOUT" : "MALFORMED_REQUEST" });
  expect(problem.detail).toMatch(detail);
  expect(problem.requestId).toEqual(expect.any(String));
  expect(answer.headers["x-request-id"]).toBe(problem.requestId);
  if (typeof instance === "string") expect(problem.instance).toBe(instance);
  else expect(problem.instance).toMatch(instance);
  if (typeof instance !== "string") expect(problem.instance).toBe(`urn:uuid:${problem.requestId}`);
  // The request id is random hex, which may hold `echoed` by chance.
  expect(answer.text.replace(JSON.stringify(problem.instance), "").replaceAll(String(problem.requestId), "")).not.toContain(echoed);
  expectNoInternals(answer.text);
  return problem;
}

describe("requests the framework refuses before any route, over a raw socket", () => {
  const get = (path: string, headers = "") => `GET ${path} HTTP/1.1\r\nHost: localhost\r\n${headers}\r\n`;

  it("answers a path that is not percent-encoded UTF-8 with a 400 problem", async () => {
    expectRawProblem(await rawRequest(get("/v1/jobs/%FF%FE")), 400, /not valid percent-encoded UTF-8/, "%FF%FE", "/v1/jobs/%FF%FE");
  });

  it("answers a path segment past the router's limit with a 414 problem, and checks shorter ones by their schema", async () => {
    const long = "a".repeat(MAX_HTTP_PATH_SEGMENT_LENGTH + 1);
    expectRawProblem(await rawRequest(get(`/v1/jobs/${long}`)), 414, new RegExp(`longer than ${MAX_HTTP_PATH_SEGMENT_LENGTH} characters`), long, `/v1/jobs/${long}`);
    const response = await request(`/v1/jobs/${"a".repeat(101)}`, { key: test.keys.acme });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ code: "INVALID_PARAMETER", errors: [{ path: "id", message: "must be a UUID" }] });
  });

  it("answers headers over Node's limit with a 431 problem", async () => {
    const big = "b".repeat(20_000);
    expectRawProblem(await rawRequest(get("/healthz?a=1", `X-Big: ${big}\r\n`)), 431, /headers are larger than the limit of \d+ bytes/, big, "/healthz?a=1");
  });

  it.each([
    ["a Content-Length that is not a number", "Content-Length: abc\r\n\r\n{}", /Content-Length is not one whole number/],
    ["two different Content-Lengths", "Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}", /Content-Length is not one whole number/],
    ["Content-Length with chunked", "Content-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n", /must not come with Content-Length/],
    ["a chunk size that is not hex", "Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n", /chunked request body is malformed/],
  ])("answers %s with a 400 problem and closes the connection", async (_label, rest, detail) => {
    const answer = await rawRequest(`POST /v1/jobs HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n${rest}`);
    expectRawProblem(answer, 400, detail, "abc", "/v1/jobs");
    expect(answer.headers.connection).toBe("close");
    // The client's own request id, when its headers were read whole and it is sane, as for any request.
    const traced = await rawRequest(`POST /v1/jobs HTTP/1.1\r\nHost: localhost\r\nX-Request-Id: raw-trace-7\r\n${rest}`);
    expect(expectRawProblem(traced, 400, detail, "abc", "/v1/jobs").requestId).toBe("raw-trace-7");
    const insane = await rawRequest(`POST /v1/jobs HTTP/1.1\r\nHost: localhost\r\nX-Request-Id: <b>\r\n${rest}`);
    expect(expectRawProblem(insane, 400, detail, "<b>", "/v1/jobs").requestId).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("answers bytes that are not HTTP with a 400 problem, and keeps serving", async () => {
    expectRawProblem(await rawRequest("HELLO THERE\r\n\r\n"), 400, /not well-formed HTTP\/1\.1/, "HELLO");
    expect((await request("/healthz")).status).toBe(200);
  });
});
