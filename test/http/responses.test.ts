/**
 * Every route of the OpenAPI document, run: a success and at least one
 * error each, and every response checked against the document, its status
 * and media type declared and its body valid under the schema declared for
 * them (objects are closed, so an undeclared field fails too). What the
 * handler returned must come out whole: a field the schema does not
 * declare would be dropped by the serializer, a value of another type
 * coerced, and either fails here. The document and the app list the same
 * routes.
 */
import { randomUUID } from "node:crypto";
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import type { LightMyRequestResponse } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { Conveyor, defineJob, type Worker } from "../../packages/core/src/index.js";
import { buildApp, type ConveyorApp } from "../../packages/http/src/app.js";
import { dashboardOnlyPaths } from "../../packages/http/src/routes/stats.js";
import { jobsIn, tune } from "../bulk-actions-support.js";
import { testDatabaseUrl } from "../helpers/database.js";
import { waitFor } from "../helpers/wait-for.js";
import { allJobs, type ApiTest, call, type Call, createApiTest, rows, silent } from "./support.js";

// ajv-formats is CommonJS: its default export arrives as module.exports.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (ajv: Ajv2020) => Ajv2020;

const report = defineJob({
  kind: "report.build",
  schema: z.object({ format: z.string() }),
  cron: [{ name: "nightly", cron: "0 3 * * *", tenant: "acme", payload: { format: "pdf" }, missed: { policy: "catch-up", limit: 2 } }],
  handler: async () => {},
});

/** Routes the document leaves out on purpose: the dashboard's files and its chart, and Swagger UI's own. */
const HIDDEN = ["get /", "get /favicon.svg", "get /v1/stats/throughput"];
const isHidden = (route: string) => HIDDEN.includes(route) || route.includes(" /docs") || route.endsWith("*");

const MISSING = "01900000-0000-7000-8000-000000000000";

let test: ApiTest;
let worker: Worker;
let unreachable: Conveyor;
let down: ConveyorApp;
let document: any;
const ajv = addFormats(new Ajv2020({ strict: false, allErrors: true }));
const validators = new Map<object, ValidateFunction>();
/** What each handler returned, as JSON.stringify writes it, by request id: the serializer must not drop or change any of it. */
const intended = new Map<string, string>();

beforeAll(async () => {
  test = await createApiTest({ bulkActionSweepMs: 0 });
  test.app.addHook("preSerialization", async (request, _reply, payload) => {
    intended.set(request.id, JSON.stringify(payload));
    return payload;
  });
  document = (await call(test.app, { url: "/openapi.json" })).json;
  worker = test.conveyor.worker({ kinds: ["doomed"], pollIntervalMs: 50, logger: silent });
  await worker.start();
  // A worker of another deploy (same schema) stores a cron schedule at start.
  const other = new Conveyor({ connectionString: testDatabaseUrl(), schema: test.schema, jobs: [report], logger: silent, poolSize: 2 });
  try {
    const scheduler = other.worker();
    await scheduler.start();
    await scheduler.stop();
  } finally {
    await other.close();
  }
  // The same API over a database it cannot reach: its 503s.
  unreachable = new Conveyor({ connectionString: "postgres://nobody@127.0.0.1:9/none", jobs: allJobs, logger: silent });
  down = await buildApp(unreachable, { logger: silent });
});
afterAll(async () => {
  await worker?.stop();
  await down?.close();
  await unreachable?.close();
  await test?.cleanup();
});

type Operation = `${"get" | "post" | "patch" | "delete"} ${string}`;
type Sent = LightMyRequestResponse & { json: any };

/** The document's operation (or a dashboard-only one's) for a method and path template; fails the test when there is none. */
function operationOf(operation: Operation): any {
  const [method, path] = operation.split(" ") as [string, string];
  const found = document.paths[path]?.[method] ?? (dashboardOnlyPaths as Record<string, Record<string, unknown>>)[path]?.[method];
  expect(found, `${operation} is not in the document`).toBeDefined();
  return found;
}

function validatorFor(schema: object): ValidateFunction {
  let validate = validators.get(schema);
  if (!validate) {
    // The document's components travel along, so a $ref into them resolves.
    validate = ajv.compile({ ...schema, components: document.components });
    validators.set(schema, validate);
  }
  return validate;
}

/** Assert that the response's status, media type and body are what the document declares for the operation. */
function expectDeclared(operation: Operation, response: Sent): void {
  const label = `${operation} → ${response.statusCode}`;
  const declared = operationOf(operation).responses[String(response.statusCode)];
  expect(declared, `${label}: status not declared (${response.body.slice(0, 300)})`).toBeDefined();
  if (response.body === "") {
    expect(declared.content, `${label}: empty body where the document declares content`).toBeUndefined();
    return;
  }
  const mediaType = String(response.headers["content-type"] ?? "").split(";")[0]!.trim();
  const content = declared.content?.[mediaType];
  expect(content, `${label}: media type ${mediaType} not declared`).toBeDefined();
  const body: unknown = mediaType.endsWith("json") ? JSON.parse(response.body) : response.body;
  const validate = validatorFor(content.schema);
  const returned = intended.get(String(response.headers["x-request-id"]));
  if (returned !== undefined && mediaType.endsWith("json")) {
    expect(body, `${label}: the response schema dropped or changed what the route returned`).toEqual(JSON.parse(returned));
  }
  const valid = validate(body);
  expect(valid, `${label}: ${ajv.errorsText(validate.errors)} in ${response.body.slice(0, 500)}`).toBe(true);
}

/** Run the requests of one operation, check each response, and return them. */
async function run(operation: Operation, requests: Array<Call & { app?: ConveyorApp }>): Promise<Sent[]> {
  const [method] = operation.split(" ");
  const sent: Sent[] = [];
  for (const { app = test.app, ...request } of requests) {
    const response = (await call(app, { method: method!.toUpperCase() as Call["method"], ...request })) as Sent;
    expectDeclared(operation, response);
    sent.push(response);
  }
  return sent;
}

const statusesOf = (sent: Sent[]) => sent.map((response) => response.statusCode);
const admin = () => test.keys.admin;
const acme = () => test.keys.acme;

async function createJob(body: unknown = { kind: "item", payload: { n: 1 }, delayMs: 600_000 }): Promise<string> {
  const response = await call(test.app, { method: "POST", url: "/v1/jobs", key: acme(), body });
  expect(response.statusCode, response.body).toBe(201);
  return response.json.id;
}

async function createFlow(): Promise<string> {
  const body = { jobs: { a: { kind: "item", payload: { n: 1 } }, b: { kind: "item", payload: { n: 2 }, dependsOn: ["a"] } } };
  const response = await call(test.app, { method: "POST", url: "/v1/flows", key: acme(), body });
  expect(response.statusCode, response.body).toBe(201);
  return response.json.id;
}

async function deadLetterId(): Promise<string> {
  const jobId = await createJob({ kind: "doomed", payload: { why: "contract" } });
  return waitFor(`job ${jobId} dead-lettered`, async () => {
    const list = await call(test.app, { url: "/v1/dead-letters?limit=1000", key: acme() });
    return list.json.items.find((entry: { jobId: string }) => entry.jobId === jobId)?.id as string | undefined;
  });
}

/**
 * A delayed job with a record of every kind the steps route shows: a
 * completed and a failed step (its error with a stack), a sleep, a wait
 * that received an event and one without a deadline; written as a durable
 * run would have written them.
 */
async function durableJob(): Promise<string> {
  const id = await createJob();
  await rows(
    test,
    `INSERT INTO {{schema}}.job_steps
       (job_id, name, kind, state, result, error, attempt, execution_id, started_at, finished_at, wake_at, tenant, event, event_key, event_id)
     VALUES ($1, 'charge', 'step', 'completed', '{"n": 1}', NULL, 1, $2, now(), now(), NULL, 'acme', NULL, NULL, NULL),
            ($1, 'ship', 'step', 'failed', NULL, '{"name": "Error", "message": "no courier", "stack": "at ship (x.js:1:1)"}', 1, $2, now(), now(), NULL, 'acme', NULL, NULL, NULL),
            ($1, 'nap', 'sleep', 'asleep', NULL, NULL, 1, $2, now(), NULL, now() + interval '1 hour', 'acme', NULL, NULL, NULL),
            ($1, 'paid', 'wait', 'received', '{"plan": "pro"}', NULL, 1, $2, now(), now(), NULL, 'acme', 'invoice.paid', 'k', $3),
            ($1, 'forever', 'wait', 'awaiting', NULL, NULL, 1, $2, now(), NULL, '9999-12-31T00:00:00Z', 'acme', 'never', '', NULL)`,
    [id, randomUUID(), randomUUID()],
  );
  return id;
}

/**
 * Per operation of the document: the requests that run it, successes and
 * errors both. Each returns its responses, which are checked as they arrive.
 */
const CASES: Record<Operation, () => Promise<Sent[]>> = {
  "get /healthz": () => run("get /healthz", [{ url: "/healthz" }]),
  "get /readyz": () => run("get /readyz", [{ url: "/readyz" }, { app: down, url: "/readyz" }]),
  "get /metrics": () => run("get /metrics", [{ url: "/metrics" }]),
  "get /openapi.json": () => run("get /openapi.json", [{ url: "/openapi.json" }]),

  "post /v1/jobs": () =>
    run("post /v1/jobs", [
      { url: "/v1/jobs", key: acme(), body: { kind: "item", payload: { n: 1 } }, headers: { "idempotency-key": "contract-1" } },
      { url: "/v1/jobs", key: acme(), body: { kind: "item", payload: { n: 1 } }, headers: { "idempotency-key": "contract-1" } },
      { url: "/v1/jobs", key: acme(), body: { kind: "item", payload: { n: 2 } }, headers: { "idempotency-key": "contract-1" } },
      { url: "/v1/jobs", key: acme(), body: { kind: "item", payload: { n: 3 }, unique: { key: "contract-u" } } },
      { url: "/v1/jobs", key: acme(), body: { kind: "item", payload: { n: 4 }, unique: { key: "contract-u", onConflict: "drop" } } },
      { url: "/v1/jobs", key: acme(), body: { kind: "no.such.kind", payload: {} } },
      { url: "/v1/jobs", key: acme(), body: "{", headers: { "content-type": "application/json" } },
      { url: "/v1/jobs", key: acme(), body: "n=1", headers: { "content-type": "text/plain" } },
      { url: "/v1/jobs", body: { kind: "item", payload: { n: 1 } } },
      { url: "/v1/jobs", key: acme(), body: { kind: "item", payload: { n: 1 }, tenant: "globex" } },
      { app: down, url: "/v1/jobs", key: acme(), body: { kind: "item", payload: { n: 1 } } },
    ]),
  "post /v1/jobs/batch": () =>
    run("post /v1/jobs/batch", [
      { url: "/v1/jobs/batch", key: acme(), body: { jobs: [{ kind: "item", payload: { n: 1 } }, { kind: "email.send", payload: { to: "A@example.com" } }] } },
      { url: "/v1/jobs/batch", key: acme(), body: { jobs: [] } },
      { url: "/v1/jobs/batch", key: acme(), body: { jobs: [{ kind: "item", payload: { n: 1 } }] }, headers: { "idempotency-key": "k" } },
    ]),
  "get /v1/jobs": () =>
    run("get /v1/jobs", [
      { url: "/v1/jobs?limit=5", key: acme() },
      { url: "/v1/jobs?limit=0", key: acme() },
      { url: "/v1/jobs?tenant=globex", key: acme() },
    ]),
  "get /v1/jobs/count": () =>
    run("get /v1/jobs/count", [
      { url: "/v1/jobs/count?status=queued", key: acme() },
      { url: "/v1/jobs/count?status=bogus", key: acme() },
    ]),
  "get /v1/jobs/{id}": async () => {
    const id = await createJob();
    return run("get /v1/jobs/{id}", [
      { url: `/v1/jobs/${id}`, key: acme() },
      { url: `/v1/jobs/${MISSING}`, key: acme() },
      { url: "/v1/jobs/not-a-uuid", key: acme() },
    ]);
  },
  "post /v1/jobs/{id}/cancel": async () => {
    const id = await createJob();
    return run("post /v1/jobs/{id}/cancel", [
      { url: `/v1/jobs/${id}/cancel`, key: acme() },
      { url: `/v1/jobs/${id}/cancel`, key: acme() },
      { url: `/v1/jobs/${MISSING}/cancel`, key: acme() },
    ]);
  },
  "get /v1/jobs/{id}/dependencies": async () => {
    const flow = await call(test.app, { url: `/v1/flows/${await createFlow()}`, key: acme() });
    const child = flow.json.jobs.find((node: { node: string }) => node.node === "b").job.id;
    return run("get /v1/jobs/{id}/dependencies", [
      { url: `/v1/jobs/${child}/dependencies`, key: acme() },
      { url: `/v1/jobs/${MISSING}/dependencies`, key: acme() },
    ]);
  },

  "get /v1/jobs/{id}/steps": async () => {
    const id = await durableJob();
    const sent = await run("get /v1/jobs/{id}/steps", [
      { url: `/v1/jobs/${id}/steps`, key: acme() },
      { url: `/v1/jobs/${MISSING}/steps`, key: acme() },
      { url: "/v1/jobs/not-a-uuid/steps", key: acme() },
    ]);
    // Every kind and state, each time (or its absence) as the document says: no deadline is null.
    expect(sent[0]!.json.items.map((step: { name: string; wakeAt: string | null }) => [step.name, step.wakeAt === null])).toEqual([
      ["charge", true],
      ["ship", true],
      ["nap", false],
      ["paid", true],
      ["forever", true],
    ]);
    return sent;
  },
  "post /v1/jobs/{id}/resume": async () => {
    const id = await createJob();
    const cancelled = await createJob();
    await call(test.app, { method: "POST", url: `/v1/jobs/${cancelled}/cancel`, key: acme() });
    return run("post /v1/jobs/{id}/resume", [
      { url: `/v1/jobs/${id}/resume`, key: acme() },
      { url: `/v1/jobs/${cancelled}/resume`, key: acme() },
      { url: `/v1/jobs/${MISSING}/resume`, key: acme() },
    ]);
  },
  "post /v1/jobs/{id}/rerun": async () => {
    const id = await durableJob();
    return run("post /v1/jobs/{id}/rerun", [
      { url: `/v1/jobs/${id}/rerun`, key: acme(), body: { fromStep: "nap" } },
      { url: `/v1/jobs/${id}/rerun`, key: acme(), body: { fromStep: "nope" } },
      { url: `/v1/jobs/${id}/rerun`, key: acme(), body: { fromStep: "" } },
      { url: `/v1/jobs/${MISSING}/rerun`, key: acme(), body: { fromStep: "nap" } },
    ]);
  },
  "post /v1/events": () =>
    run("post /v1/events", [
      { url: "/v1/events", key: acme(), body: { event: "invoice.paid", key: "k", payload: { plan: "pro" } } },
      { url: "/v1/events", key: admin(), body: { event: "invoice.paid", tenant: "globex" } },
      { url: "/v1/events", key: acme(), body: { event: "" } },
      { url: "/v1/events", key: acme(), body: { event: "invoice.paid", tenant: "globex" } },
    ]),

  "post /v1/flows": () => {
    const body = { idempotencyKey: "contract-flow", jobs: { a: { kind: "item", payload: { n: 1 } }, b: { kind: "item", payload: { n: 2 }, dependsOn: ["a"] } } };
    return run("post /v1/flows", [
      { url: "/v1/flows", key: acme(), body },
      { url: "/v1/flows", key: acme(), body },
      { url: "/v1/flows", key: acme(), body: { ...body, name: "changed" } },
      { url: "/v1/flows", key: acme(), body: { jobs: { a: { kind: "item", payload: { n: 1 }, dependsOn: ["a"] } } } },
    ]);
  },
  "get /v1/flows": () =>
    run("get /v1/flows", [
      { url: "/v1/flows?limit=2", key: acme() },
      { url: "/v1/flows?cursor=nonsense", key: acme() },
    ]),
  "get /v1/flows/{id}": async () => {
    const id = await createFlow();
    return run("get /v1/flows/{id}", [
      { url: `/v1/flows/${id}`, key: acme() },
      { url: `/v1/flows/${MISSING}`, key: acme() },
    ]);
  },
  "post /v1/flows/{id}/cancel": async () => {
    const id = await createFlow();
    return run("post /v1/flows/{id}/cancel", [
      { url: `/v1/flows/${id}/cancel`, key: acme() },
      { url: `/v1/flows/${MISSING}/cancel`, key: acme() },
    ]);
  },
  "post /v1/batches": () =>
    run("post /v1/batches", [
      { url: "/v1/batches", key: acme(), body: { jobs: [{ kind: "item", payload: { n: 1 } }], callback: { kind: "item", payload: { n: 9 }, when: "always" } } },
      { url: "/v1/batches", key: acme(), body: { jobs: [], callback: { kind: "item", payload: { n: 9 } } } },
    ]),

  "post /v1/bulk-actions": () =>
    run("post /v1/bulk-actions", [
      { url: "/v1/bulk-actions", key: admin(), body: { action: "set_priority", filter: { queue: "nothing-here" }, priority: 3 } },
      { url: "/v1/bulk-actions", key: admin(), body: { action: "cancel", filter: {} } },
      { url: "/v1/bulk-actions", key: acme(), body: { action: "cancel", filter: { tenant: "globex" } } },
    ]),
  "get /v1/bulk-actions": () =>
    run("get /v1/bulk-actions", [
      { url: "/v1/bulk-actions", key: admin() },
      { url: "/v1/bulk-actions?limit=0", key: admin() },
    ]),
  "get /v1/bulk-actions/{id}": async () => {
    const started = await call(test.app, { method: "POST", url: "/v1/bulk-actions", key: admin(), body: { action: "purge", filter: { queue: "nothing-here" } } });
    return run("get /v1/bulk-actions/{id}", [
      { url: `/v1/bulk-actions/${started.json.id}`, key: admin() },
      { url: `/v1/bulk-actions/${MISSING}`, key: admin() },
    ]);
  },
  "post /v1/bulk-actions/{id}/cancel": async () => {
    // Small, slow batches keep the operation running while it is cancelled.
    tune(test.conveyor, { batchSize: 1, pauseMs: 200 });
    try {
      await jobsIn(test.conveyor, "queued", 5, { queue: "bulk-slow" });
      const started = await call(test.app, { method: "POST", url: "/v1/bulk-actions", key: admin(), body: { action: "set_priority", filter: { queue: "bulk-slow" }, priority: 1 } });
      return await run("post /v1/bulk-actions/{id}/cancel", [
        { url: `/v1/bulk-actions/${started.json.id}/cancel`, key: admin() },
        { url: `/v1/bulk-actions/${MISSING}/cancel`, key: admin() },
      ]);
    } finally {
      tune(test.conveyor, { batchSize: 500, pauseMs: 0 });
    }
  },

  "get /v1/dead-letters": async () => {
    await deadLetterId();
    return run("get /v1/dead-letters", [
      { url: "/v1/dead-letters", key: acme() },
      { url: "/v1/dead-letters?limit=0", key: acme() },
    ]);
  },
  "get /v1/dead-letters/{id}": async () => {
    const id = await deadLetterId();
    return run("get /v1/dead-letters/{id}", [
      { url: `/v1/dead-letters/${id}`, key: acme() },
      { url: `/v1/dead-letters/${MISSING}`, key: acme() },
    ]);
  },
  "post /v1/dead-letters/{id}/requeue": async () => {
    const id = await deadLetterId();
    return run("post /v1/dead-letters/{id}/requeue", [
      { url: `/v1/dead-letters/${id}/requeue`, key: acme() },
      { url: `/v1/dead-letters/${MISSING}/requeue`, key: acme() },
    ]);
  },
  "delete /v1/dead-letters/{id}": async () => {
    const id = await deadLetterId();
    return run("delete /v1/dead-letters/{id}", [
      { url: `/v1/dead-letters/${id}`, key: acme() },
      { url: `/v1/dead-letters/${id}`, key: acme() },
    ]);
  },

  "get /v1/queues": async () => {
    await createJob();
    await call(test.app, { method: "PATCH", url: "/v1/queues/default/key-limits", key: admin(), body: { concurrency: 2 } });
    return run("get /v1/queues", [
      { url: "/v1/queues", key: admin() },
      { url: "/v1/queues?tenant=globex", key: acme() },
    ]);
  },
  "post /v1/queues/{name}/pause": () =>
    run("post /v1/queues/{name}/pause", [
      { url: "/v1/queues/contract/pause", key: admin() },
      { url: "/v1/queues/contract/pause", key: acme() },
    ]),
  "post /v1/queues/{name}/resume": () =>
    run("post /v1/queues/{name}/resume", [
      { url: "/v1/queues/contract/resume", key: admin() },
      { url: "/v1/queues/bad%20name/resume", key: admin() },
    ]),
  "patch /v1/queues/{name}": () =>
    run("patch /v1/queues/{name}", [
      { url: "/v1/queues/contract", key: admin(), body: { concurrency: 3, rateLimit: { count: 10, intervalMs: 1000 } } },
      { url: "/v1/queues/contract", key: admin(), body: {} },
    ]),
  "delete /v1/queues/{name}": () =>
    run("delete /v1/queues/{name}", [
      { url: "/v1/queues/contract", key: admin() },
      { url: "/v1/queues/contract", key: admin() },
    ]),
  "patch /v1/tenants/{tenant}": () =>
    run("patch /v1/tenants/{tenant}", [
      { url: "/v1/tenants/acme", key: admin(), body: { concurrency: 2 } },
      { url: "/v1/tenants/acme", key: admin(), body: { concurrency: 0 } },
    ]),

  "patch /v1/queues/{name}/key-limits": () =>
    run("patch /v1/queues/{name}/key-limits", [
      { url: "/v1/queues/keyed/key-limits", key: admin(), body: { concurrency: 2, throttleMs: 100 } },
      { url: "/v1/queues/keyed/key-limits", key: admin(), body: {} },
      { url: "/v1/queues/keyed/key-limits", key: acme(), body: { concurrency: 2 } },
    ]),
  "get /v1/queues/{name}/key-limits": () =>
    run("get /v1/queues/{name}/key-limits", [
      { url: "/v1/queues/keyed/key-limits", key: admin() },
      { url: "/v1/queues/keyed/key-limits", key: acme() },
    ]),
  "get /v1/key-limits": () =>
    run("get /v1/key-limits", [
      { url: "/v1/key-limits", key: admin() },
      { url: "/v1/key-limits", key: acme() },
    ]),
  "delete /v1/queues/{name}/key-limits": async () => {
    await call(test.app, { method: "PATCH", url: "/v1/queues/unkeyed/key-limits", key: admin(), body: { concurrency: 1 } });
    return run("delete /v1/queues/{name}/key-limits", [
      { url: "/v1/queues/unkeyed/key-limits", key: admin() },
      { url: "/v1/queues/unkeyed/key-limits", key: admin() }, // none left: still 204
      { url: "/v1/queues/unkeyed/key-limits", key: acme() },
    ]);
  },
  "get /v1/queues/{name}/keys": async () => {
    await createJob({ kind: "item", payload: { n: 1 }, queue: "keyed", limitKey: "host-a" });
    return run("get /v1/queues/{name}/keys", [
      { url: "/v1/queues/keyed/keys?limit=5", key: admin() },
      { url: "/v1/queues/keyed/keys?limit=0", key: admin() },
    ]);
  },
  "get /v1/queues/{name}/keys/{key}": () =>
    run("get /v1/queues/{name}/keys/{key}", [
      { url: "/v1/queues/keyed/keys/host-a", key: admin() },
      { url: "/v1/queues/keyed/keys/host-a", key: acme() },
    ]),
  "patch /v1/queues/{name}/keys/{key}/limits": () =>
    run("patch /v1/queues/{name}/keys/{key}/limits", [
      { url: "/v1/queues/keyed/keys/host-a/limits", key: admin(), body: { rateLimit: { count: 5, intervalMs: 1000 } } },
      { url: "/v1/queues/keyed/keys/host-a/limits", key: admin(), body: { rateLimit: { count: 0, intervalMs: 1000 } } },
    ]),
  "delete /v1/queues/{name}/keys/{key}/limits": async () => {
    await call(test.app, { method: "PATCH", url: "/v1/queues/keyed/keys/host-b/limits", key: admin(), body: { concurrency: 1 } });
    return run("delete /v1/queues/{name}/keys/{key}/limits", [
      { url: "/v1/queues/keyed/keys/host-b/limits", key: admin() },
      { url: "/v1/queues/keyed/keys/host-b/limits", key: admin() },
    ]);
  },

  "get /v1/me": async () => {
    const sent = await run("get /v1/me", [{ url: "/v1/me", key: admin() }, { url: "/v1/me", key: acme() }, { url: "/v1/me" }]);
    expect(sent.map((response) => (response.statusCode === 200 ? JSON.parse(response.body).admin : response.statusCode))).toEqual([true, false, 401]);
    return sent;
  },
  "get /v1/workers": () =>
    run("get /v1/workers", [
      { url: "/v1/workers", key: admin() },
      { url: "/v1/workers" },
    ]),
  "get /v1/overview": async () => {
    await deadLetterId();
    return run("get /v1/overview", [
      { url: "/v1/overview", key: admin() },
      { url: "/v1/overview?tenant=globex", key: acme() },
    ]);
  },
  "get /v1/schedules": () =>
    run("get /v1/schedules", [
      { url: "/v1/schedules", key: admin() },
      { url: "/v1/schedules?tenant=globex", key: acme() },
    ]),
  "post /v1/maintenance/prune": () =>
    run("post /v1/maintenance/prune", [
      { url: "/v1/maintenance/prune", key: admin(), body: { finishedMs: 3_600_000 } },
      { url: "/v1/maintenance/prune", key: acme() },
    ]),
};

/** The routes only the dashboard uses: hidden from the document, their schemas in `dashboardOnlyPaths`. */
const DASHBOARD_CASES: Record<Operation, () => Promise<Sent[]>> = {
  "get /v1/stats/throughput": async () => {
    await createJob();
    return run("get /v1/stats/throughput", [
      { url: "/v1/stats/throughput", key: acme() },
      { url: "/v1/stats/throughput?tenant=globex", key: acme() },
    ]);
  },
};

/** The app's routes as `method path`, from Fastify's route tree (HEAD, which Fastify adds to each GET, left out). */
function appRoutes(app: ConveyorApp): string[] {
  const paths: string[] = [];
  const routes: string[] = [];
  for (const line of app.printRoutes({ commonPrefix: false }).split("\n")) {
    const match = /^((?:│ {3}| {4})*)[├└]── (.*?)(?: \(([A-Z, ]+)\))?$/.exec(line);
    if (!match) continue;
    const depth = match[1]!.length / 4;
    const path = (paths[depth - 1] ?? "") + match[2];
    paths.length = depth;
    paths.push(path);
    for (const method of match[3]?.split(", ") ?? []) if (method !== "HEAD") routes.push(`${method.toLowerCase()} ${path}`);
  }
  return routes;
}

describe("the OpenAPI document and the app", () => {
  it("list the same routes", () => {
    const documented = Object.entries<Record<string, unknown>>(document.paths).flatMap(([path, item]) =>
      Object.keys(item).map((method) => `${method} ${path.replace(/\{(\w+)\}/g, ":$1")}`),
    );
    for (const route of documented) {
      const [method, url] = route.split(" ") as [string, string];
      expect(test.app.hasRoute({ method: method.toUpperCase() as "GET", url }), `${route} is documented but not served`).toBe(true);
    }
    const served = appRoutes(test.app).filter((route) => !isHidden(route));
    expect(served.sort()).toEqual([...documented].sort());
  });

  it("have a case below for every documented operation, and none for an undocumented one", () => {
    const documented = Object.entries<Record<string, unknown>>(document.paths).flatMap(([path, item]) => Object.keys(item).map((method) => `${method} ${path}`));
    expect(Object.keys(CASES).sort()).toEqual(documented.sort());
    const dashboardOnly = Object.entries<Record<string, unknown>>(dashboardOnlyPaths).flatMap(([path, item]) => Object.keys(item).map((method) => `${method} ${path}`));
    expect(Object.keys(DASHBOARD_CASES).sort()).toEqual(dashboardOnly.sort());
  });
});

describe("every route answers only what the document declares", () => {
  for (const [operation, runCase] of Object.entries({ ...CASES, ...DASHBOARD_CASES }) as Array<[Operation, () => Promise<Sent[]>]>) {
    it(operation, async () => {
      const statuses = statusesOf(await runCase());
      expect(statuses.some((status) => status >= 200 && status < 300), `${operation}: no success among ${statuses.join(", ")}`).toBe(true);
      const declaresErrors = Object.keys(operationOf(operation).responses).some((status) => Number(status) >= 400);
      if (declaresErrors) expect(statuses.some((status) => status >= 400), `${operation}: no error among ${statuses.join(", ")}`).toBe(true);
    });
  }
});

describe("the check itself", () => {
  it("fails on an undeclared status, an undeclared field and a wrong type", () => {
    const fake = (statusCode: number, body: unknown) =>
      ({ statusCode, body: JSON.stringify(body), headers: { "content-type": "application/json; charset=utf-8" }, json: body }) as unknown as Sent;
    expect(() => expectDeclared("get /v1/jobs/count", fake(418, { count: 1, estimated: false }))).toThrow(/status not declared/);
    expect(() => expectDeclared("get /v1/jobs/count", fake(200, { count: 1, estimated: false, extra: true }))).toThrow(/must NOT have additional properties/);
    expect(() => expectDeclared("get /v1/jobs/count", fake(200, { count: "1", estimated: false }))).toThrow(/must be integer/);
    expect(() => expectDeclared("get /v1/jobs/count", fake(200, { count: 1, estimated: false }))).not.toThrow();
    // The cases above compared what their handlers returned with what was sent.
    expect(intended.size).toBeGreaterThan(50);
  });
});
