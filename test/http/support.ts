import type { InjectOptions, LightMyRequestResponse } from "fastify";
import pino from "pino";
import { expect } from "vitest";
import { z } from "zod";
import type { ApiKeys } from "../../packages/core/src/client/api-keys.js";
import type { AnyJobDefinition } from "../../packages/core/src/core/define-job.js";
import type { ConveyorOptions } from "../../packages/core/src/client/options.js";
import { Conveyor, defineJob, PermanentError } from "../../packages/core/src/index.js";
import { buildApp, type ConveyorApp } from "../../packages/http/src/app.js";
import type { ApiOptions } from "../../packages/http/src/options.js";
import { createTestConveyor } from "../helpers/database.js";

export const silent = pino({ level: "silent" });

/** Handlers that a test can hold in `running` until it releases them. */
export const releases = new Map<string, () => void>();

/** A zod schema that transforms: what is stored is the parsed output. */
export const email = defineJob({
  kind: "email.send",
  schema: z.object({ to: z.string().trim().toLowerCase().pipe(z.email()), subject: z.string().default("(no subject)") }),
  queue: "mail",
  priority: 5,
  maxAttempts: 7,
  handler: async () => {},
});
/** Any JSON under `value`: the JSON checks (not the schema) have the last word. */
export const anyValue = defineJob({ kind: "any.value", schema: z.object({ value: z.unknown() }), handler: async () => {} });
export const item = defineJob({ kind: "item", schema: z.object({ n: z.number().int() }), handler: async () => {} });
/** Dead-letters on its first attempt. */
export const doomed = defineJob({
  kind: "doomed",
  schema: z.object({ why: z.string() }),
  handler: ({ payload }) => {
    throw new PermanentError(payload.why);
  },
});
/** Runs until released or aborted (cancel). */
export const held = defineJob({
  kind: "held",
  schema: z.object({}),
  handler: ({ signal, job }) =>
    new Promise<void>((resolve, reject) => {
      releases.set(job.id, resolve);
      signal.addEventListener("abort", () => reject(signal.reason));
    }),
});
/** A recursive schema, for the OpenAPI document. */
type Tree = { name: string; children: Tree[] };
const tree: z.ZodType<Tree> = z.object({ name: z.string(), children: z.lazy(() => z.array(tree)) });
export const treeJob = defineJob({ kind: "tree:walk/v1", schema: tree, handler: async () => {} });

// `as unknown as`: TypeScript measures JobDefinition's schema parameter as
// invariant, so a zod-typed definition is not assignable to AnyJobDefinition
// (reported; `AnyJobDefinition = JobDefinition<any, any>` would fix it).
export const allJobs = [email, anyValue, item, doomed, held, treeJob] as unknown as readonly AnyJobDefinition[];

/** Keys every HTTP test file starts with. */
export interface TestKeys {
  admin: string;
  acme: string;
  globex: string;
}

export interface ApiTest {
  conveyor: Conveyor;
  app: ConveyorApp;
  keys: TestKeys;
  apiKeys: ApiKeys;
  schema: string;
  cleanup(): Promise<void>;
}

/** A migrated schema of its own, an app over it, and three keys: admin, tenant "acme", tenant "globex". */
export async function createApiTest(appOptions: ApiOptions = {}, clientOptions: Partial<ConveyorOptions> = {}): Promise<ApiTest> {
  const test = await createTestConveyor({ jobs: allJobs, logger: silent, ...clientOptions });
  const apiKeys = test.conveyor.apiKeys;
  const keys: TestKeys = {
    admin: (await apiKeys.create({ admin: true, name: "ops" })).key,
    acme: (await apiKeys.create({ tenant: "acme" })).key,
    globex: (await apiKeys.create({ tenant: "globex" })).key,
  };
  const app = await buildApp(test.conveyor, { logger: silent, ...appOptions });
  return {
    conveyor: test.conveyor,
    app,
    keys,
    apiKeys,
    schema: test.schema,
    cleanup: async () => {
      await app.close();
      await test.cleanup();
    },
  };
}

export interface Call {
  method?: InjectOptions["method"];
  url: string;
  key?: string;
  body?: unknown;
  headers?: Record<string, string>;
}

/** A request through `inject`; `json` is the parsed body when there is one. */
export async function call(app: ConveyorApp, request: Call): Promise<LightMyRequestResponse & { json: any }> {
  const headers: Record<string, string> = { ...request.headers };
  if (request.key !== undefined) headers.authorization = `Bearer ${request.key}`;
  const response = await app.inject({
    method: request.method ?? "GET",
    url: request.url,
    headers,
    ...(request.body === undefined ? {} : typeof request.body === "string" || Buffer.isBuffer(request.body) ? { payload: request.body } : { payload: request.body as object }),
  });
  let json: unknown;
  try {
    json = response.body === "" ? undefined : JSON.parse(response.body);
  } catch {
    json = undefined;
  }
  return Object.assign(response, { json });
}

/** Assert an RFC 9457 problem: media type, members, request id, and no internals in it. */
export function expectProblem(response: LightMyRequestResponse & { json: any }, status: number, code: string): any {
  expect(response.statusCode, response.body).toBe(status);
  expect(response.headers["content-type"]).toMatch(/^application\/problem\+json/);
  const body = response.json;
  expect(body).toMatchObject({ type: "about:blank", status, code });
  expect(typeof body.title).toBe("string");
  expect(typeof body.detail).toBe("string");
  expect(body.detail.length).toBeGreaterThan(5);
  expect(body.requestId).toBe(response.headers["x-request-id"]);
  expectNoInternals(response.body);
  return body;
}

/** No stack frames, SQL or driver wording in a response. */
export function expectNoInternals(text: string): void {
  expect(text).not.toMatch(/\bat .+\.(js|ts):\d+/);
  expect(text).not.toMatch(/\b(SELECT|INSERT|UPDATE|DELETE FROM|relation|syntax error|pg_|ECONNREFUSED)\b/);
}

/** Exactly the documented job fields. */
export const JOB_FIELDS = [
  "id",
  "tenant",
  "kind",
  "queue",
  "payload",
  "status",
  "priority",
  "attempts",
  "maxAttempts",
  "runAt",
  "lastError",
  "cancelRequested",
  "uniqueKey",
  "limitKey",
  "createdAt",
  "updatedAt",
  "startedAt",
  "finishedAt",
  "result",
  "progress",
  "progressUpdatedAt",
].sort();

/** Rows of a table in the test's schema, read directly (not through the API). */
export async function rows(test: ApiTest, sql: string, values: unknown[] = []): Promise<any[]> {
  const result = await test.conveyor.pool.query(sql.replaceAll("{{schema}}", `"${test.schema}"`), values);
  return result.rows;
}

/** A pino logger (level debug) whose JSON lines are kept for assertions. */
export function captureLogs(): { logger: pino.Logger; lines: string[]; entries(): Array<Record<string, any>> } {
  const lines: string[] = [];
  const logger = pino({ level: "debug" }, { write: (chunk: string) => void lines.push(...chunk.split("\n").filter(Boolean)) });
  return { logger, lines, entries: () => lines.map((line) => JSON.parse(line)) };
}
