import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectTestClient } from "../helpers/database.js";
import { type ApiTest, call, captureLogs, createApiTest, expectNoInternals, expectProblem, silent } from "./support.js";
import { buildApp } from "../../packages/http/src/app.js";
import { Conveyor } from "../../packages/core/src/index.js";
import { allJobs } from "./support.js";
import { waitFor } from "../helpers/wait-for.js";

let test: ApiTest;
beforeAll(async () => {
  test = await createApiTest({ bodyLimit: 64 * 1024 });
});
afterAll(() => test.cleanup());

describe("problem+json", () => {
  it("answers unknown routes and methods with 404", async () => {
    const problem = expectProblem(await call(test.app, { url: "/v2/jobs" }), 404, "NOT_FOUND");
    expect(problem).toMatchObject({ title: "Not Found", detail: "no route GET /v2/jobs", instance: "/v2/jobs" });
    expectProblem(await call(test.app, { method: "PUT", url: "/v1/jobs", key: test.keys.acme }), 404, "NOT_FOUND");
    expectProblem(await call(test.app, { method: "DELETE", url: "/v1/jobs/0190f5c2-0000-7000-8000-000000000000", key: test.keys.acme }), 404, "NOT_FOUND");
  });

  it("answers a body over the limit with 413", async () => {
    const body = { kind: "any.value", payload: { value: "x".repeat(70 * 1024) } };
    const problem = expectProblem(await call(test.app, { method: "POST", url: "/v1/jobs", key: test.keys.acme, body }), 413, "PAYLOAD_TOO_LARGE");
    expect(problem.detail).toBe("request body is larger than the limit of 65536 bytes");
  });

  it("answers a body that is not JSON with 415, and malformed JSON with 400", async () => {
    expectProblem(
      await call(test.app, { method: "POST", url: "/v1/jobs", key: test.keys.acme, body: "<job/>", headers: { "content-type": "application/xml" } }),
      415,
      "UNSUPPORTED_MEDIA_TYPE",
    );
    for (const text of ["{", '{"kind": "item",}', "nul", '{"a": 1} trailing']) {
      const response = await call(test.app, { method: "POST", url: "/v1/jobs", key: test.keys.acme, body: text, headers: { "content-type": "application/json" } });
      expect(expectProblem(response, 400, "MALFORMED_REQUEST").detail).toMatch(/^request body is not valid JSON: /);
    }
  });

  it("refuses with 415 a charset other than UTF-8 and a compressed body, rather than guess; accepts utf-8 and identity", async () => {
    const body = JSON.stringify({ kind: "item", payload: { n: 1 } });
    const count = async () => (await test.conveyor.pool.query(`SELECT count(*)::int AS n FROM "${test.schema}".jobs`)).rows[0].n as number;
    const before = await count();
    const post = (headers: Record<string, string>, payload: string | Buffer = body) =>
      call(test.app, { method: "POST", url: "/v1/jobs", key: test.keys.acme, body: payload, headers: { "content-type": "application/json", ...headers } });
    for (const contentType of ["application/json; charset=utf-16", "application/json;charset=ISO-8859-1", 'application/json; charset="utf-16le"']) {
      const problem = expectProblem(await post({ "content-type": contentType }, Buffer.from(body, "utf16le")), 415, "UNSUPPORTED_MEDIA_TYPE");
      expect(problem.detail).toMatch(/UTF-8/);
    }
    for (const encoding of ["gzip", "br", "identity, gzip", "x-custom"]) {
      const response = await post({ "content-encoding": encoding });
      expect(expectProblem(response, 415, "UNSUPPORTED_MEDIA_TYPE").detail).toMatch(/compressed/);
      expect(response.headers["accept-encoding"]).toBe("identity");
    }
    expect(await count()).toBe(before);
    for (const headers of [{ "content-type": "application/json; charset=utf-8" } as Record<string, string>, { "content-type": "application/json; charset=UTF-8" }, { "content-encoding": "identity" }]) {
      expect((await post(headers)).statusCode, JSON.stringify(headers)).toBe(201);
    }
  });

  it("answers 503 when a request runs past the time limit (a row lock held elsewhere); the late result is dropped quietly", async () => {
    const logs = captureLogs();
    const app = await buildApp(test.conveyor, { logger: logs.logger, requestTimeoutMs: 500 });
    try {
      const job = (await call(app, { method: "POST", url: "/v1/jobs", key: test.keys.acme, body: { kind: "item", payload: { n: 1 }, delayMs: 60_000 } })).json;
      const blocker = await connectTestClient();
      try {
        await blocker.query("BEGIN");
        await blocker.query(`SELECT 1 FROM "${test.schema}".jobs WHERE id = $1 FOR UPDATE`, [job.id]);
        const started = Date.now();
        const response = await call(app, { method: "POST", url: `/v1/jobs/${job.id}/cancel`, key: test.keys.acme });
        const problem = expectProblem(response, 503, "TIMEOUT");
        expect(problem.detail).toMatch(/did not complete within 500 ms/);
        expect(response.headers["retry-after"]).toBe("1");
        expect(Date.now() - started).toBeLessThan(5_000);
      } finally {
        await blocker.query("ROLLBACK");
        await blocker.end();
      }
      // The cancel statement was already sent: it completes once the lock is gone, answering nobody.
      const after = await waitFor("late cancel applied", async () => {
        const read = await call(app, { url: `/v1/jobs/${job.id}`, key: test.keys.acme });
        return read.json.status === "cancelled" ? read : null;
      });
      expect(after.statusCode).toBe(200);
      // The handler says when its late result was dropped; what Fastify does with the handler's
      // return value runs in the microtasks after it, all done before the next macrotask.
      await waitFor("the late result dropped", () =>
        logs.entries().some((entry) => entry.msg === "request finished after its answer was sent; its result is dropped"),
      );
      await new Promise((resolve) => setImmediate(resolve));
      expect(logs.entries().filter((entry) => entry.level >= 40 && entry.code !== "TIMEOUT")).toEqual([]);
    } finally {
      await app.close();
    }
  });

  it("sends 204 without a body and without warnings", async () => {
    const logs = captureLogs();
    const app = await buildApp(test.conveyor, { logger: logs.logger });
    try {
      const response = await call(app, { method: "DELETE", url: "/v1/dead-letters/0190f5c2-0000-7000-8000-000000000000", key: test.keys.acme });
      expect(response.statusCode).toBe(404);
      expect(logs.entries().filter((entry) => entry.level >= 40)).toEqual([]);
    } finally {
      await app.close();
    }
  });

  it("hides internal failures behind a generic 500 that names only the request id", async () => {
    const { conveyor } = test;
    await conveyor.pool.query(`ALTER TABLE "${test.schema}".jobs_dead RENAME TO jobs_dead_away`);
    try {
      const response = await call(test.app, { url: "/v1/dead-letters", key: test.keys.acme, headers: { "x-request-id": "trace-500" } });
      const problem = expectProblem(response, 500, "INTERNAL");
      expect(problem.detail).toBe("internal error; the server log has the details under this request's id");
      expect(problem.requestId).toBe("trace-500");
      expect(response.body).not.toContain("jobs_dead");
    } finally {
      await conveyor.pool.query(`ALTER TABLE "${test.schema}".jobs_dead_away RENAME TO jobs_dead`);
    }
  });

  it("answers 503 when the database is unreachable, and /readyz says so", async () => {
    const unreachable = new Conveyor({ connectionString: "postgres://nobody@127.0.0.1:9/none", jobs: allJobs, logger: silent });
    const app = await buildApp(unreachable, { logger: silent });
    try {
      const auth = await call(app, { url: "/v1/jobs", key: test.keys.acme });
      expect(expectProblem(auth, 503, "UNAVAILABLE").detail).toBe("the database is unreachable; try again later");
      expect(auth.headers["retry-after"]).toBe("5");
      expect(expectProblem(await call(app, { url: "/readyz" }), 503, "UNAVAILABLE").detail).toBe("the database is unreachable");
      expect((await call(app, { url: "/healthz" })).statusCode).toBe(200);
    } finally {
      await app.close();
      await unreachable.close();
    }
  });
});

describe("request ids", () => {
  it("echo a sane x-request-id and replace anything else", async () => {
    const echoed = await call(test.app, { url: "/healthz", headers: { "x-request-id": "abc-123_DEF.4:5" } });
    expect(echoed.headers["x-request-id"]).toBe("abc-123_DEF.4:5");
    for (const insane of ["has space", "x".repeat(129), "new\\nline", "<script>"]) {
      const response = await call(test.app, { url: "/healthz", headers: { "x-request-id": insane } });
      expect(response.headers["x-request-id"]).toMatch(/^[0-9a-f-]{36}$/);
    }
  });

  it("are on every response, errors and 404s included, and in the problem body", async () => {
    const responses = [
      await call(test.app, { url: "/nowhere" }),
      await call(test.app, { url: "/v1/jobs" }),
      await call(test.app, { url: "/v1/jobs", key: test.keys.acme }),
      await call(test.app, { method: "POST", url: "/v1/jobs", key: test.keys.acme, body: "{", headers: { "content-type": "application/json" } }),
    ];
    for (const response of responses) {
      expect(response.headers["x-request-id"]).toBeTruthy();
      if (response.statusCode >= 400) expect(response.json.requestId).toBe(response.headers["x-request-id"]);
      expectNoInternals(response.body);
    }
    const ids = new Set(responses.map((response) => response.headers["x-request-id"]));
    expect(ids.size).toBe(responses.length);
  });
});

describe("logs", () => {
  it("are pino JSON lines carrying the request id", async () => {
    const logs = captureLogs();
    const app = await buildApp(test.conveyor, { logger: logs.logger });
    try {
      await call(app, { url: "/v1/jobs?limit=0", key: test.keys.acme, headers: { "x-request-id": "log-me-1" } });
    } finally {
      await app.close();
    }
    const lines = logs.lines;
    const entries = lines.map((line) => JSON.parse(line));
    const mine = entries.filter((entry) => entry.requestId === "log-me-1");
    expect(mine.map((entry) => entry.msg)).toEqual(expect.arrayContaining(["incoming request", "request refused", "request completed"]));
    expect(mine.find((entry) => entry.msg === "request refused")).toMatchObject({ code: "INVALID_PARAMETER" });
    expect(lines.join("\n")).not.toContain(test.keys.acme); // the Authorization header is never logged
  });
});
