/**
 * A database that refuses writes (a standby during a failover, or
 * default_transaction_read_only on) is a temporary condition the caller can
 * wait out, not an internal error. Here the API's Conveyor pool connects
 * with `options=-c default_transaction_read_only=on` to a schema migrated
 * through a writable connection. Asserts: POST /v1/jobs and POST
 * /v1/jobs/batch answer 503 DATABASE_READ_ONLY (problem+json, Retry-After,
 * a detail saying the database refuses writes) and write nothing; /readyz
 * answers 503 while the database refuses writes and 200 over a writable
 * pool; and the library's `enqueue` rejects with the typed
 * DatabaseReadOnlyError (a DatabaseError). Issue 29: such a write used to
 * be an opaque DATABASE error, a 500, and /readyz said ready.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { READ_ONLY_RETRY_AFTER_S } from "../../packages/core/src/core/defaults.js";
import { buildApp, type ConveyorApp } from "../../packages/http/src/app.js";
import { Conveyor, DatabaseError, DatabaseReadOnlyError } from "../../packages/core/src/index.js";
import { testDatabaseUrl } from "../helpers/database.js";
import { allJobs, type ApiTest, call, createApiTest, expectProblem, rows, silent } from "./support.js";

let test: ApiTest;
let readOnly: Conveyor;
let readOnlyApp: ConveyorApp;

/** The test database's URL with every session of the pool read-only by default. */
function readOnlyUrl(): string {
  const url = new URL(testDatabaseUrl());
  url.searchParams.set("options", "-c default_transaction_read_only=on");
  return url.toString();
}

beforeAll(async () => {
  test = await createApiTest(); // migrated (and keys created) through a writable pool
  readOnly = new Conveyor({ connectionString: readOnlyUrl(), schema: test.schema, jobs: allJobs, poolSize: 2, logger: silent });
  readOnlyApp = await buildApp(readOnly, { logger: silent });
});

afterAll(async () => {
  await readOnlyApp?.close();
  await readOnly?.close();
  await test?.cleanup();
});

const jobCount = async () => (await rows(test, "SELECT count(*)::int AS n FROM {{schema}}.jobs"))[0].n as number;

function expectReadOnlyProblem(response: Awaited<ReturnType<typeof call>>): void {
  const problem = expectProblem(response, 503, "DATABASE_READ_ONLY");
  expect(response.headers["retry-after"]).toBe(String(READ_ONLY_RETRY_AFTER_S));
  expect(problem.detail).toMatch(/the database refuses writes/);
}

describe("a database that refuses writes", () => {
  it("the pool's sessions really are read-only", async () => {
    const { rows: settings } = await readOnly.pool.query<{ value: string }>("SELECT current_setting('default_transaction_read_only') AS value");
    expect(settings[0]!.value).toBe("on");
  });

  it("POST /v1/jobs: 503 DATABASE_READ_ONLY with Retry-After, nothing written", async () => {
    const before = await jobCount();
    expectReadOnlyProblem(await call(readOnlyApp, { method: "POST", url: "/v1/jobs", key: test.keys.acme, body: { kind: "item", payload: { n: 1 } } }));
    expect(await jobCount()).toBe(before);
  });

  it("POST /v1/jobs/batch: 503 DATABASE_READ_ONLY with Retry-After, nothing written", async () => {
    const before = await jobCount();
    const jobs = Array.from({ length: 3 }, (_, n) => ({ kind: "item", payload: { n } }));
    expectReadOnlyProblem(await call(readOnlyApp, { method: "POST", url: "/v1/jobs/batch", key: test.keys.acme, body: { jobs } }));
    expect(await jobCount()).toBe(before);
  });

  it("GET /readyz: 503 while the database refuses writes, 200 over a writable pool", async () => {
    const refused = await call(readOnlyApp, { url: "/readyz" });
    expect(refused.statusCode, refused.body).toBe(503);
    expect(refused.headers["content-type"]).toMatch(/^application\/problem\+json/);
    expect(refused.json).toMatchObject({ status: 503, code: "DATABASE_READ_ONLY" });
    expect(refused.json.detail).toMatch(/refuses writes/);
    expect(refused.headers["retry-after"]).toBe(String(READ_ONLY_RETRY_AFTER_S));

    const ready = await call(test.app, { url: "/readyz" });
    expect(ready.statusCode, ready.body).toBe(200);
    expect(ready.json).toMatchObject({ status: "ready" });
  });

  it("the library: enqueue rejects with DatabaseReadOnlyError, a DatabaseError", async () => {
    const error = await readOnly.enqueue("item", { n: 2 }).then(
      () => null,
      (rejection: unknown) => rejection,
    );
    expect(error).toMatchObject({ code: "DATABASE_READ_ONLY", name: "DatabaseReadOnlyError" });
    expect(error).toBeInstanceOf(DatabaseReadOnlyError);
    expect(error).toBeInstanceOf(DatabaseError);
    expect((error as Error).message).toMatch(/refuses writes/);
    // The writable pool on the same schema still writes.
    await expect(test.conveyor.enqueue("item", { n: 3 })).resolves.toMatchObject({ kind: "item" });
  });
});
