/**
 * Refusals at the edges of the HTTP API, through `inject`: text PostgreSQL
 * cannot store (NUL characters, lone UTF-16 surrogates) and query strings
 * that are not percent-encoded UTF-8 are refused naming the field, with the
 * same status and code as every other bad value of their kind, never with
 * database text; and every problem, the framework's own included, carries
 * `instance` and `requestId`. (Refusals of the HTTP parser, over a real
 * socket, are in server.test.ts.)
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_HTTP_PATH_SEGMENT_LENGTH } from "../../packages/core/src/core/defaults.js";
import { type ApiTest, call, createApiTest, expectProblem } from "./support.js";

let test: ApiTest;
beforeAll(async () => {
  test = await createApiTest({ bodyLimit: 64 * 1024 });
});
afterAll(() => test.cleanup());

const payloadFilter = (json: string) => `payload=${encodeURIComponent(json)}`;
// What PostgreSQL's own refusals say (22P02, 22P05, 22021), and how a refusal passing them on reads.
const DATABASE_WORDING = /database|invalid input syntax|unsupported Unicode escape|invalid byte sequence|untranslatable|\bjsonb\b/i;

/** Rows of the jobs, flows and bulk action tables: a refusal changes none. */
async function stored(): Promise<number[]> {
  const { rows } = await test.conveyor.pool.query(
    `SELECT (SELECT count(*) FROM "${test.schema}".jobs)::int AS jobs, (SELECT count(*) FROM "${test.schema}".flows)::int AS flows,
            (SELECT count(*) FROM "${test.schema}".bulk_actions)::int AS bulk`,
  );
  return [rows[0].jobs, rows[0].flows, rows[0].bulk];
}

describe("bad search values", () => {
  // Each a query of GET /v1/jobs and GET /v1/jobs/count, and the parameter it must name.
  const cases: Array<[string, string, string]> = [
    ["a lone surrogate in a payload filter", payloadFilter('{"a":"\\ud800"}'), "payload"],
    ["a lone low surrogate in a payload filter's array", payloadFilter('{"a":["ok","\\udc00x"]}'), "payload"],
    ["a lone surrogate in a payload filter's key", payloadFilter('{"\\ud800":1}'), "payload"],
    ["a NUL in a payload filter", payloadFilter('{"a":"x\\u0000y"}'), "payload"],
    ["a NUL in a payload filter's key", payloadFilter('{"a\\u0000":1}'), "payload"],
    ["a payload filter that is not an object", payloadFilter("[1]"), "payload"],
    ["a payload filter over the limit", payloadFilter(JSON.stringify({ a: "x".repeat(8 * 1024) })), "payload"],
    ["a NUL in a kind", "kind=%00", "kind"],
    ["a NUL in error text", "error=a%00b", "error"],
    ["a control character in a queue", "queue=a%01", "queue"],
    ["a status that does not exist", "status=finished", "status"],
    ["invalid UTF-8 in a kind", "kind=%FF", "kind"],
    ["invalid UTF-8 in error text", "error=time%C3out", "error"],
    ["an encoded surrogate in a tenant", "tenant=%ED%A0%80", "tenant"],
    ["a stray percent sign in a queue", "queue=100%", "queue"],
    ["invalid UTF-8 in a status", "status=%FF", "status"],
  ];

  it.each(cases)("%s: 400 INVALID_PARAMETER naming it, with no database text", async (_name, query, parameter) => {
    for (const path of ["/v1/jobs", "/v1/jobs/count"]) {
      const response = await call(test.app, { url: `${path}?${query}`, key: test.keys.admin });
      const problem = expectProblem(response, 400, "INVALID_PARAMETER");
      expect(problem.errors.map((issue: { path: string }) => issue.path)).toEqual([parameter]);
      expect(problem.detail).toMatch(new RegExp(`^invalid query: ${parameter}: `));
      expect(problem.detail).not.toMatch(DATABASE_WORDING);
    }
  });

  it("names where in the payload filter the text is, and accepts paired surrogates", async () => {
    const lone = expectProblem(await call(test.app, { url: `/v1/jobs?${payloadFilter('{"order":{"note":"\\ud800"}}')}`, key: test.keys.admin }), 400, "INVALID_PARAMETER");
    expect(lone.detail).toBe("invalid query: payload: contains a lone UTF-16 surrogate, which is not valid Unicode (at order.note)");
    const nul = expectProblem(await call(test.app, { url: `/v1/jobs?${payloadFilter('{"a\\u0000":1}')}`, key: test.keys.admin }), 400, "INVALID_PARAMETER");
    expect(nul.detail).toBe('invalid query: payload: contains a NUL character (\\u0000), which PostgreSQL cannot store (at key "a\\u0000")');
    const paired = await call(test.app, { url: `/v1/jobs/count?${payloadFilter('{"a":"\\ud83d\\ude80 𝄞"}')}`, key: test.keys.admin });
    expect(paired.statusCode, paired.body).toBe(200);
    expect(paired.json).toEqual({ count: 0, estimated: false });
  });

  it("refuses query strings that are not percent-encoded UTF-8 on every route that reads one, and accepts encoded UTF-8", async () => {
    for (const url of ["/v1/dead-letters?kind=%FF", "/v1/flows?tenant=%C3", "/v1/bulk-actions?tenant=%E2%82", "/v1/queues?tenant=%ZZ"]) {
      const problem = expectProblem(await call(test.app, { url, key: test.keys.admin }), 400, "INVALID_PARAMETER");
      expect(problem.errors.map((issue: { path: string }) => issue.path), url).toEqual([url.slice(url.indexOf("?") + 1, url.indexOf("="))]);
      expect(problem.errors[0].message).toBe("is not percent-encoded UTF-8");
    }
    // A name that is not UTF-8 is named as sent.
    expect(expectProblem(await call(test.app, { url: "/v1/jobs?%FF=1", key: test.keys.admin }), 400, "INVALID_PARAMETER").errors).toEqual([
      { path: "%FF", message: "is not percent-encoded UTF-8" },
    ]);
    const jobs = await test.conveyor.enqueueMany([{ job: "item", payload: { n: 1 }, tenant: "café" }]);
    const found = await call(test.app, { url: "/v1/jobs?tenant=caf%C3%A9&error=&kind=item", key: test.keys.admin });
    // An empty error text is refused by its own rule, not by the encoding check.
    expect(expectProblem(found, 400, "INVALID_PARAMETER").errors.map((issue: { path: string }) => issue.path)).toEqual(["error"]);
    const listed = await call(test.app, { url: "/v1/jobs?tenant=caf%C3%A9&kind=item+", key: test.keys.admin });
    expect(listed.statusCode, listed.body).toBe(200);
    expect(listed.json.items).toEqual([]);
    const exact = await call(test.app, { url: "/v1/jobs?tenant=caf%C3%A9&kind=item", key: test.keys.admin });
    expect(exact.json.items.map((job: { id: string }) => job.id)).toEqual(jobs.map((job) => job.id));
  });
});

describe("text PostgreSQL cannot store, in request bodies", () => {
  const job = { kind: "item", payload: { n: 1 } };
  // Each a body that reaches PostgreSQL, the text that cannot be stored in it, and the path it must name.
  const cases: Array<[string, string, unknown, string]> = [
    ["a payload value", "/v1/jobs", { kind: "any.value", payload: { value: "\ud800" } }, "payload.value"],
    ["a tenant", "/v1/jobs", { ...job, tenant: "t\ud800" }, "tenant"],
    ["a unique key", "/v1/jobs", { ...job, unique: { key: "k\udc00" } }, "unique.key"],
    ["a batch item's idempotency key", "/v1/jobs/batch", { jobs: [{ ...job, idempotencyKey: "i\ud800" }] }, "jobs.0.idempotencyKey"],
    ["a flow's name", "/v1/flows", { name: "n\ud800", jobs: { a: job } }, "name"],
    ["a flow's node name", "/v1/flows", { jobs: { "a\ud800": job } }, 'jobs key "a\\ud800"'],
    ["a batch's name", "/v1/batches", { name: "n\ud800", jobs: [job], callback: job }, "name"],
    ["a bulk action's payload filter", "/v1/bulk-actions", { action: "cancel", filter: { payload: { a: "\ud800" } } }, "filter.payload.a"],
    ["a bulk action's kind filter", "/v1/bulk-actions", { action: "cancel", filter: { kind: "\udfff" } }, "filter.kind"],
    ["a flow's name, as NUL", "/v1/flows", { name: "n\u0000", jobs: { a: job } }, "name"],
    ["a bulk action's payload filter, as NUL", "/v1/bulk-actions", { action: "cancel", filter: { payload: { a: "\u0000" } } }, "filter.payload.a"],
  ];

  it.each(cases)("%s: 422 VALIDATION naming it, nothing stored, no database text", async (_name, url, body, path) => {
    const before = await stored();
    // JSON.stringify writes a lone surrogate as its \u escape, as any client sends it.
    const response = await call(test.app, { method: "POST", url, key: test.keys.admin, body: JSON.stringify(body), headers: { "content-type": "application/json" } });
    const problem = expectProblem(response, 422, "VALIDATION");
    const what = JSON.stringify(body).includes("\\u0000") ? "contains a NUL character (\\u0000), which PostgreSQL cannot store" : "contains a lone UTF-16 surrogate, which is not valid Unicode";
    expect(problem.errors).toEqual([{ path, message: what }]);
    expect(problem.detail).toBe(`${path} ${what}`);
    expect(problem.detail).not.toMatch(DATABASE_WORDING);
    expect(await stored()).toEqual(before);
  });
});

describe("problems the framework answers", () => {
  it("carry instance and requestId, as every problem does", async () => {
    const long = "a".repeat(MAX_HTTP_PATH_SEGMENT_LENGTH + 1);
    const json = { "content-type": "application/json" };
    const cases: Array<[number, Parameters<typeof call>[1]]> = [
      [404, { url: "/v2/jobs?x=1" }],
      [404, { method: "PUT", url: "/v1/jobs", key: test.keys.acme }],
      [401, { url: "/v1/jobs" }],
      [400, { method: "POST", url: "/v1/jobs", key: test.keys.acme, body: "{", headers: json }],
      [400, { method: "POST", url: "/v1/jobs", key: test.keys.acme, body: Buffer.from([0x22, 0xc3, 0x28, 0x22]), headers: json }],
      [415, { method: "POST", url: "/v1/jobs", key: test.keys.acme, body: "<job/>", headers: { "content-type": "application/xml" } }],
      [415, { method: "POST", url: "/v1/jobs", key: test.keys.acme, body: "{}", headers: { ...json, "content-encoding": "gzip" } }],
      [413, { method: "POST", url: "/v1/jobs", key: test.keys.acme, body: JSON.stringify({ kind: "item", payload: { n: "x".repeat(70 * 1024) } }), headers: json }],
      [400, { url: "/v1/jobs/%FF%FE", key: test.keys.acme }],
      [414, { url: `/v1/jobs/${long}`, key: test.keys.acme }],
      [400, { url: "/v1/jobs?kind=%FF", key: test.keys.acme }],
      [400, { url: "/v1/jobs/not-a-uuid", key: test.keys.acme }],
    ];
    for (const [status, request] of cases) {
      for (const sentId of [undefined, "refusal-trace-1"]) {
        const headers = { ...request.headers, ...(sentId === undefined ? {} : { "x-request-id": sentId }) };
        const response = await call(test.app, { ...request, headers });
        const problem = expectProblem(response, status, response.json?.code ?? "?");
        const label = `${request.method ?? "GET"} ${request.url.slice(0, 60)}`;
        expect(problem.instance, label).toBe(request.url);
        expect(problem.requestId, label).toBe(response.headers["x-request-id"]);
        if (sentId !== undefined) expect(problem.requestId, label).toBe(sentId);
      }
    }
  });
});
