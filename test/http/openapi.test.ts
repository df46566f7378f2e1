import { Validator } from "@seriousme/openapi-schema-validator";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_LIST_LIMIT } from "../../packages/core/src/core/defaults.js";
import { type ApiTest, call, createApiTest } from "./support.js";

let test: ApiTest;
let document: any;
beforeAll(async () => {
  test = await createApiTest();
  const response = await call(test.app, { url: "/openapi.json" });
  expect(response.statusCode).toBe(200);
  document = response.json;
});
afterAll(() => test.cleanup());

/** Every operation the issue specifies, and the unauthenticated ones. */
const OPERATIONS = [
  ["post", "/v1/jobs"],
  ["post", "/v1/jobs/batch"],
  ["get", "/v1/jobs"],
  ["get", "/v1/jobs/count"],
  ["get", "/v1/jobs/{id}"],
  ["post", "/v1/jobs/{id}/cancel"],
  ["get", "/v1/jobs/{id}/dependencies"],
  ["get", "/v1/jobs/{id}/steps"],
  ["post", "/v1/jobs/{id}/resume"],
  ["post", "/v1/jobs/{id}/rerun"],
  ["post", "/v1/events"],
  ["post", "/v1/flows"],
  ["get", "/v1/flows"],
  ["get", "/v1/flows/{id}"],
  ["post", "/v1/flows/{id}/cancel"],
  ["post", "/v1/batches"],
  ["get", "/v1/bulk-actions"],
  ["post", "/v1/bulk-actions"],
  ["get", "/v1/bulk-actions/{id}"],
  ["post", "/v1/bulk-actions/{id}/cancel"],
  ["get", "/v1/dead-letters"],
  ["get", "/v1/dead-letters/{id}"],
  ["post", "/v1/dead-letters/{id}/requeue"],
  ["delete", "/v1/dead-letters/{id}"],
  ["get", "/v1/queues"],
  ["post", "/v1/queues/{name}/pause"],
  ["post", "/v1/queues/{name}/resume"],
  ["patch", "/v1/queues/{name}"],
  ["delete", "/v1/queues/{name}"],
  ["patch", "/v1/tenants/{tenant}"],
  ["patch", "/v1/queues/{name}/key-limits"],
  ["get", "/v1/queues/{name}/key-limits"],
  ["get", "/v1/key-limits"],
  ["delete", "/v1/queues/{name}/key-limits"],
  ["get", "/v1/queues/{name}/keys"],
  ["get", "/v1/queues/{name}/keys/{key}"],
  ["patch", "/v1/queues/{name}/keys/{key}/limits"],
  ["delete", "/v1/queues/{name}/keys/{key}/limits"],
  ["get", "/v1/me"],
  ["get", "/v1/workers"],
  ["get", "/v1/overview"],
  ["get", "/v1/schedules"],
  ["post", "/v1/maintenance/prune"],
  ["get", "/healthz"],
  ["get", "/readyz"],
  ["get", "/metrics"],
  ["get", "/openapi.json"],
] as const;

/** Follow a local JSON pointer ("#/components/schemas/X") in the document. */
function resolvePointer(ref: string): unknown {
  return ref
    .slice(2)
    .split("/")
    .map((part) => part.replaceAll("~1", "/").replaceAll("~0", "~"))
    .reduce<any>((node, part) => (node === undefined ? undefined : node[part]), document);
}

function collectRefs(node: unknown, found: string[] = []): string[] {
  if (Array.isArray(node)) node.forEach((item) => collectRefs(item, found));
  else if (node && typeof node === "object") {
    for (const [key, value] of Object.entries(node)) {
      if (key === "$ref" && typeof value === "string") found.push(value);
      else collectRefs(value, found);
    }
  }
  return found;
}

describe("GET /openapi.json", () => {
  it("is a valid OpenAPI 3.1 document", async () => {
    const validator = new Validator();
    const result = await validator.validate(document);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe("3.1");
    expect(document.openapi).toBe("3.1.0");
  });

  it("lists every route, and nothing else (Swagger UI's own routes are hidden)", () => {
    const listed = Object.entries(document.paths).flatMap(([path, item]) => Object.keys(item as object).map((method) => `${method} ${path}`));
    expect(listed.sort()).toEqual(OPERATIONS.map(([method, path]) => `${method} ${path}`).sort());
    const operationIds = listed.map((entry) => {
      const [method, path] = entry.split(" ");
      return document.paths[path!][method!].operationId;
    });
    expect(new Set(operationIds).size).toBe(OPERATIONS.length);
  });

  it("requires the bearer key on every /v1 operation and on nothing else", () => {
    expect(document.components.securitySchemes.bearerAuth).toEqual(expect.objectContaining({ type: "http", scheme: "bearer" }));
    for (const [method, path] of OPERATIONS) {
      const operation = document.paths[path][method];
      if (path.startsWith("/v1/")) expect(operation.security, path).toEqual([{ bearerAuth: [] }]);
      else expect(operation.security, path).toBeUndefined();
    }
  });

  it("documents problem+json errors, the UUID id parameter, the Idempotency-Key header and status codes", () => {
    const create = document.paths["/v1/jobs"].post;
    expect(Object.keys(create.responses).sort()).toEqual(["200", "201", "400", "401", "403", "409", "413", "415", "422", "503"]);
    expect(create.responses["422"].content["application/problem+json"].schema.required).toEqual(["type", "title", "status", "detail", "code"]);
    expect(create.parameters).toContainEqual(expect.objectContaining({ in: "header", name: "idempotency-key", required: false }));
    const cancel = document.paths["/v1/jobs/{id}/cancel"].post;
    expect(Object.keys(cancel.responses)).toEqual(expect.arrayContaining(["200", "202", "404", "409"]));
    expect(cancel.parameters).toContainEqual(expect.objectContaining({ in: "path", name: "id", required: true, schema: expect.objectContaining({ pattern: expect.any(String) }) }));
    expect(Object.keys(document.paths["/v1/dead-letters/{id}"].delete.responses)).toContain("204");
    expect(Object.keys(document.paths["/v1/dead-letters/{id}/requeue"].post.responses)).toContain("201");
    const list = document.paths["/v1/jobs"].get;
    // Every search filter field, and paging; the count takes the same filters.
    const filterFields = ["createdAfter", "createdBefore", "error", "finishedAfter", "finishedBefore", "id", "idempotencyKey", "kind", "payload", "queue", "status", "tenant", "uniqueKey"];
    expect(list.parameters.map((p: { name: string }) => p.name).sort()).toEqual([...filterFields, "cursor", "limit"].sort());
    expect(list.parameters.every((p: { in: string; required?: boolean; description?: string; schema: { description?: string } }) => p.in === "query" && !p.required)).toBe(true);
    const countOperation = document.paths["/v1/jobs/count"].get;
    expect(countOperation.parameters.map((p: { name: string }) => p.name).sort()).toEqual(filterFields);
    expect(Object.keys(countOperation.responses).sort()).toEqual(["200", "400", "401", "403", "422", "503"]);
    expect(countOperation.responses["422"].description).toMatch(/^SEARCH_TIMEOUT/);
    expect(countOperation.responses["200"].content["application/json"].schema.required.sort()).toEqual(["count", "estimated"]);
    expect(list.responses["422"].description).toMatch(/^SEARCH_TIMEOUT/);
    const overview = document.paths["/v1/overview"].get;
    expect(overview.parameters.map((p: { name: string }) => p.name)).toEqual(["tenant"]);
    expect(Object.keys(overview.responses["200"].content["application/json"].schema.properties).sort()).toEqual(
      ["at", "exactCountLimit", "incomplete", "kinds", "oldestReadyJob", "queues", "stuck", "tenant", "topErrors", "windowMs", "workers"],
    );
    // A generated client sends `limit: 5`: the parameter is an integer with its real range, and the server takes "?limit=5".
    expect(list.parameters.find((p: { name: string }) => p.name === "limit").schema).toMatchObject({ type: "integer", minimum: 1, maximum: MAX_LIST_LIMIT });
    for (const [path, methods] of Object.entries<Record<string, { parameters?: Array<{ name: string; in: string; schema: Record<string, unknown> }> }>>(document.paths)) {
      for (const [method, operation] of Object.entries(methods)) {
        for (const parameter of operation.parameters ?? []) {
          if (parameter.in !== "query") continue;
          // A date-time's pattern has digits in it too, and is a string by nature.
          const digitsOnly = typeof parameter.schema.pattern === "string" && /\\d/.test(parameter.schema.pattern) && parameter.schema.format !== "date-time";
          expect(digitsOnly, `${method} ${path} ?${parameter.name}: a number typed as a string`).toBe(false);
        }
      }
    }
    const job = list.responses["200"].content["application/json"].schema.properties.items.items;
    expect(Object.keys(job.properties).sort()).toEqual(
      ["id", "tenant", "kind", "queue", "payload", "status", "priority", "attempts", "maxAttempts", "runAt", "lastError", "cancelRequested", "uniqueKey", "limitKey", "createdAt", "updatedAt", "startedAt", "finishedAt", "result", "progress", "progressUpdatedAt"].sort(),
    );
    // Durable execution: the step record, the event body with its limits, and what a rerun can answer.
    const step = document.paths["/v1/jobs/{id}/steps"].get.responses["200"].content["application/json"].schema.properties.items.items;
    expect(Object.keys(step.properties).sort()).toEqual(
      ["name", "seq", "kind", "state", "result", "error", "attempt", "executionId", "startedAt", "finishedAt", "wakeAt", "event", "eventKey", "eventId"].sort(),
    );
    expect(step.properties.state.enum).toEqual(["completed", "failed", "asleep", "awake", "awaiting", "received", "timed_out"]);
    const event = document.paths["/v1/events"].post.requestBody.content["application/json"].schema;
    expect(event).toMatchObject({ required: ["event"], additionalProperties: false });
    expect(event.properties.event).toMatchObject({ type: "string", minLength: 1, maxLength: 255 });
    expect(event.properties.key).toMatchObject({ type: "string", maxLength: 255 });
    expect(Object.keys(document.paths["/v1/jobs/{id}/rerun"].post.responses).sort()).toEqual(["200", "400", "401", "404", "409", "413", "415", "422", "503"]);
    expect(Object.keys(document.paths["/v1/jobs/{id}/resume"].post.responses).sort()).toEqual(["200", "400", "401", "404", "409", "503"]);
  });

  it("includes each job kind's payload schema, recursive ones too, with every $ref resolving", () => {
    const schemas = document.components.schemas;
    expect(schemas["JobPayload.email.send"]).toMatchObject({
      type: "object",
      // Input side: the schema trims and lowercases a string, then checks it is an email.
      properties: { to: { type: "string" }, subject: { type: "string", default: "(no subject)" } },
      required: ["to"],
    });
    expect(schemas["JobPayload.item"]).toMatchObject({ properties: { n: { type: "integer" } } });
    expect(schemas["JobPayload.tree_walk_v1"].title).toBe("payload of tree:walk/v1");
    const body = document.paths["/v1/jobs"].post.requestBody.content["application/json"].schema;
    expect(body.properties.kind.enum).toEqual(["email.send", "any.value", "item", "doomed", "held", "tree:walk/v1"]);
    expect(body.oneOf).toHaveLength(6);
    expect(body.oneOf[0]).toEqual({
      title: "email.send",
      properties: { kind: { enum: ["email.send"] }, payload: { $ref: "#/components/schemas/JobPayload.email.send" } },
    });
    const batchItem = document.paths["/v1/jobs/batch"].post.requestBody.content["application/json"].schema.properties.jobs.items;
    expect(batchItem.oneOf).toHaveLength(6);
    expect(document.paths["/v1/jobs/batch"].post.requestBody.content["application/json"].schema.properties.jobs.maxItems).toBe(1000);
    const flowBody = document.paths["/v1/flows"].post.requestBody.content["application/json"].schema;
    expect(flowBody.properties.jobs.additionalProperties.oneOf).toHaveLength(6);
    const batchBody = document.paths["/v1/batches"].post.requestBody.content["application/json"].schema;
    expect(batchBody.properties.jobs.items.oneOf).toHaveLength(6);
    expect(batchBody.properties.callback.oneOf).toHaveLength(6);
    expect(batchBody.properties.callback.properties.when.enum).toEqual(["always", "succeeded", "failed"]);
    const refs = collectRefs(document);
    expect(refs).toContain("#/components/schemas/JobPayload.tree_walk_v1");
    for (const ref of refs) expect(resolvePointer(ref), ref).toBeDefined();
  });
});

describe("GET /docs", () => {
  it("serves Swagger UI over this document", async () => {
    const page = await call(test.app, { url: "/docs" });
    expect(page.statusCode).toBe(200);
    expect(page.headers["content-type"]).toMatch(/^text\/html/);
    expect(page.body).toContain("swagger-ui");
    const initializer = await call(test.app, { url: "/docs/static/swagger-initializer.js" });
    expect(initializer.statusCode).toBe(200);
    const spec = await call(test.app, { url: "/docs/json" });
    expect(spec.json.paths).toEqual(document.paths);
  });
});
