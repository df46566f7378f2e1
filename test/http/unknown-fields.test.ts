/**
 * One rule for unknown fields, on every request body of the API, as in the
 * library: a field a body does not define is refused with 422 problem JSON
 * naming it, on routes that take a body and on routes that take none alike;
 * the OpenAPI document says so (`additionalProperties: false` on every
 * object of every request body).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ApiTest, call, createApiTest, expectProblem } from "./support.js";

let test: ApiTest;
let document: any;
beforeAll(async () => {
  test = await createApiTest();
  document = (await call(test.app, { url: "/openapi.json" })).json;
});
afterAll(() => test.cleanup());

const ID = "01890000-0000-7000-8000-000000000000";
const WRITE_METHODS = ["post", "put", "patch", "delete"];

/** Every write operation of the document, with its path's parameters filled in. */
function writeOperations(): Array<[string, string, string]> {
  const operations: Array<[string, string, string]> = [];
  for (const [path, item] of Object.entries<any>(document.paths)) {
    for (const method of WRITE_METHODS) {
      if (!item[method]) continue;
      const url = path.replace("{id}", ID).replace("{name}", "mail").replace("{key}", "k").replace("{tenant}", "acme");
      operations.push([method.toUpperCase(), path, url]);
    }
  }
  return operations;
}

/** Object schemas in a request body that do not close themselves; `payload` is the job kind's own schema. */
function openObjects(node: unknown, at: string): string[] {
  if (node === null || typeof node !== "object") return [];
  if (Array.isArray(node)) return node.flatMap((entry, i) => openObjects(entry, `${at}[${i}]`));
  const schema = node as Record<string, unknown>;
  const open = schema.type === "object" && schema.properties !== undefined && schema.additionalProperties !== false ? [at] : [];
  return [...open, ...Object.entries(schema).flatMap(([key, value]) => (key === "payload" ? [] : openObjects(value, `${at}.${key}`)))];
}

describe("every write route refuses a body field it does not define", () => {
  it("covers the write routes the document lists", () => {
    expect(writeOperations().length).toBeGreaterThanOrEqual(20);
  });

  it.each([
    ["POST", "/v1/jobs/{id}/resume"],
    ["POST", "/v1/jobs/{id}/cancel"],
    ["POST", "/v1/dead-letters/{id}/requeue"],
    ["DELETE", "/v1/dead-letters/{id}"],
    ["POST", "/v1/queues/{name}/pause"],
    ["DELETE", "/v1/queues/{name}/key-limits"],
  ])("%s %s, which takes no body", async (method, path) => {
    const url = path.replace("{id}", ID).replace("{name}", "mail");
    const response = await call(test.app, { method: method as "POST", url, key: test.keys.admin, body: { x: 1 } });
    const problem = expectProblem(response, 422, "VALIDATION");
    expect(problem.errors).toEqual([{ path: "x", message: "is not a known field" }]);
  });

  it("each write route of the document", async () => {
    for (const [method, path, url] of writeOperations()) {
      const response = await call(test.app, { method: method as "POST", url, key: test.keys.admin, body: { x: 1 } });
      expect(response.statusCode, `${method} ${path}: ${response.body}`).toBe(422);
      expect(response.json.errors, `${method} ${path}`).toContainEqual({ path: "x", message: "is not a known field" });
    }
  });

  it("still takes no body, or {}, where none is defined", async () => {
    for (const body of [undefined, {}]) {
      const response = await call(test.app, { method: "POST", url: "/v1/queues/mail/pause", key: test.keys.admin, body });
      expect(response.statusCode, response.body).toBe(200);
    }
  });
});

describe("the OpenAPI document", () => {
  it("gives every write route a request body whose objects are all closed", () => {
    for (const [method, path] of writeOperations()) {
      const operation = document.paths[path][method.toLowerCase()];
      const schema = operation.requestBody?.content?.["application/json"]?.schema;
      expect(schema, `${method} ${path} declares no request body`).toBeDefined();
      expect(openObjects(schema, `${method} ${path}`)).toEqual([]);
    }
  });
});
