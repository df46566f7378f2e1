/**
 * Run times at the edges of what is stored: delays and run times past the
 * bound are refused with a problem naming the field and store nothing, and
 * a stored time no JavaScript Date can hold (put there with raw SQL, the
 * CHECK dropped in this file's own schema) breaks no listing: not the API,
 * not the CLI.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_DELAY_MS } from "../../packages/core/src/core/defaults.js";
import { runCli } from "../cli/support.js";
import { type ApiTest, call, createApiTest, expectProblem, rows } from "./support.js";

let test: ApiTest;
beforeAll(async () => {
  test = await createApiTest();
});
afterAll(() => test.cleanup());

const post = (body: unknown) => call(test.app, { method: "POST", url: "/v1/jobs", key: test.keys.acme, body });
const jobCount = async () => (await rows(test, "SELECT count(*)::int AS n FROM {{schema}}.jobs"))[0].n as number;

describe("POST /v1/jobs run time bounds", () => {
  it.each([MAX_DELAY_MS + 1, 8.7e15, 9007199254740992, 1e17])("refuses delayMs %s with 422 naming delayMs, storing nothing", async (delayMs) => {
    const before = await jobCount();
    const problem = expectProblem(await post({ kind: "item", payload: { n: 1 }, delayMs }), 422, "VALIDATION");
    expect(problem.errors).toEqual([{ path: "delayMs", message: expect.any(String) }]);
    expect(await jobCount()).toBe(before);
  });

  it.each(["1970-01-01T00:00:00Z", "1999-12-31T23:59:59.999Z"])("refuses runAt %s with 422 naming runAt", async (runAt) => {
    const problem = expectProblem(await post({ kind: "item", payload: { n: 1 }, runAt }), 422, "VALIDATION");
    expect(problem.errors).toEqual([{ path: "runAt", message: expect.stringMatching(/2000-01-01/) }]);
  });

  it("accepts the longest delay and the last run time", async () => {
    const [{ now }] = await rows(test, "SELECT now() AS now");
    const delayed = await post({ kind: "item", payload: { n: 2 }, delayMs: MAX_DELAY_MS });
    expect(delayed.statusCode, delayed.body).toBe(201);
    expect(new Date(delayed.json.runAt).getTime()).toBeGreaterThanOrEqual(now.getTime() + MAX_DELAY_MS);
    const last = await post({ kind: "item", payload: { n: 3 }, runAt: "9999-12-31T23:59:59.999Z" });
    expect(last.statusCode, last.body).toBe(201);
    expect(last.json.runAt).toBe("9999-12-31T23:59:59.999Z");
  });

  it("documents the bound in the OpenAPI document", async () => {
    const document = (await call(test.app, { url: "/openapi.json" })).json;
    const schema = document.paths["/v1/jobs"].post.requestBody.content["application/json"].schema;
    const fields = schema.properties ?? schema.allOf?.[0]?.properties ?? schema.oneOf?.[0]?.properties;
    expect(fields.delayMs).toMatchObject({ type: "number", minimum: 0, maximum: MAX_DELAY_MS });
    expect(fields.runAt.description).toMatch(/2000-01-01.*10000-01-01/);
  });
});

describe("a stored time JavaScript cannot represent", () => {
  let badId: string;
  let goodId: string;

  beforeAll(async () => {
    // As a database could hold from before migration 013, or by hand.
    await rows(test, "ALTER TABLE {{schema}}.jobs DROP CONSTRAINT jobs_run_at_bounded");
    goodId = (await post({ kind: "item", payload: { n: 4 } })).json.id;
    const [bad] = await rows(
      test,
      `INSERT INTO {{schema}}.jobs (id, tenant, queue, kind, payload, max_attempts, run_at, updated_at)
       VALUES ({{schema}}.uuid_v7(), 'acme', 'default', 'item', '{"n":5}', 3, '275761-01-01 00:00:00+00', 'infinity')
       RETURNING id`,
    );
    badId = bad.id;
    await rows(
      test,
      `INSERT INTO {{schema}}.job_executions (id, job_id, attempt, worker_id, started_at, finished_at, outcome)
       VALUES ({{schema}}.uuid_v7(), $1, 1, 'w', '-infinity', 'infinity', 'failed')`,
      [badId],
    );
  });

  it("lists every job (admin and tenant), the bad one with null times", async () => {
    for (const key of [test.keys.admin, test.keys.acme]) {
      const response = await call(test.app, { url: "/v1/jobs?limit=1000", key });
      expect(response.statusCode, response.body).toBe(200);
      const ids = response.json.items.map((job: { id: string }) => job.id);
      expect(ids).toEqual(expect.arrayContaining([badId, goodId]));
      const bad = response.json.items.find((job: { id: string }) => job.id === badId);
      expect(bad).toMatchObject({ runAt: null, updatedAt: null, createdAt: expect.any(String), payload: { n: 5 } });
    }
  });

  it("shows the job with its execution", async () => {
    const response = await call(test.app, { url: `/v1/jobs/${badId}`, key: test.keys.admin });
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json).toMatchObject({ id: badId, runAt: null, executions: [{ startedAt: null, finishedAt: null, outcome: "failed" }] });
  });

  it("leaves `conveyor jobs list` and `jobs show` working, human and --json", async () => {
    const list = await runCli(["jobs", "list", "--schema", test.schema]);
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout).toContain(badId);
    const listed = await runCli(["jobs", "list", "--json", "--schema", test.schema]);
    expect(listed.code, listed.stderr).toBe(0);
    expect(JSON.parse(listed.stdout).items.find((job: { id: string }) => job.id === badId)).toMatchObject({ runAt: null });
    const shown = await runCli(["jobs", "show", badId, "--schema", test.schema]);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toMatch(/^run at:\s+out of range$/m);
    const shownJson = await runCli(["jobs", "show", badId, "--json", "--schema", test.schema]);
    expect(shownJson.code, shownJson.stderr).toBe(0);
    expect(JSON.parse(shownJson.stdout)).toMatchObject({ id: badId, runAt: null, updatedAt: null });
  });
});
