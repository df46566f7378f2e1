/**
 * The bulk action routes through the app: the operation's exact JSON and
 * its Location, progress to the end over several batches, who asked, tenant
 * keys kept to their tenant (403 for a filter naming another, 404 for
 * another's operation), problems naming the field with nothing stored,
 * cancel, paging, the OpenAPI document, and the server resuming an
 * operation whose process died.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { changedIds, emptyTables, jobsIn, snapshot, tune } from "../bulk-actions-support.js";
import { countRows } from "../helpers/database.js";
import { sql } from "../worker/support.js";
import { type ApiTest, call, createApiTest, expectProblem } from "./support.js";
import { waitFor } from "../helpers/wait-for.js";

let test: ApiTest;
beforeAll(async () => {
  test = await createApiTest({ bulkActionSweepMs: 0 });
});
afterAll(() => test.cleanup());
beforeEach(async () => {
  tune(test.conveyor, { batchSize: 500, pauseMs: 0 });
  await emptyTables(test.conveyor);
});

const start = (key: string, body: unknown) => call(test.app, { method: "POST", url: "/v1/bulk-actions", key, body });
const get = (key: string, id: string) => call(test.app, { url: `/v1/bulk-actions/${id}`, key });
const cancel = (key: string, id: string) => call(test.app, { method: "POST", url: `/v1/bulk-actions/${id}/cancel`, key });

/** The operation once it has ended, read through the API. */
async function ended(key: string, id: string) {
  return waitFor(`bulk action ${id} to end`, async () => {
    const response = await get(key, id);
    return response.json.status === "running" ? null : response.json;
  });
}

async function keyIdOf(key: string): Promise<string> {
  return (await test.apiKeys.authenticate(key))!.id;
}

const FIELDS = [
  "id", "tenant", "action", "filter", "priority", "queue", "status", "requestedBy", "total", "touched",
  "createdAt", "updatedAt", "finishedAt", "cancelRequested", "error",
];

describe("POST /v1/bulk-actions", () => {
  it("answers 202 with the operation and its Location, and does the work in batches", async () => {
    tune(test.conveyor, { batchSize: 4 });
    const dead = await jobsIn(test.conveyor, "dead", 10, { queue: "mail" });
    const kept = await jobsIn(test.conveyor, "dead", 3, { queue: "other" });
    const response = await start(test.keys.admin, { action: "retry", filter: { status: "dead", queue: "mail", createdAfter: "2000-01-01T00:00:00Z" } });
    expect(response.statusCode, response.body).toBe(202);
    const operation = response.json;
    expect(Object.keys(operation).sort()).toEqual([...FIELDS].sort());
    expect(operation).toMatchObject({
      tenant: null,
      action: "retry",
      filter: { status: "dead", queue: "mail", createdAfter: "2000-01-01T00:00:00.000Z" },
      priority: null,
      queue: null,
      status: "running",
      requestedBy: await keyIdOf(test.keys.admin),
      total: 10,
      cancelRequested: false,
      error: null,
      finishedAt: null,
    });
    expect(response.headers.location).toBe(`/v1/bulk-actions/${operation.id}`);
    const done = await ended(test.keys.admin, operation.id);
    expect(done).toMatchObject({ id: operation.id, status: "succeeded", touched: 10, total: 10 });
    expect(Date.parse(done.finishedAt)).toBeGreaterThanOrEqual(Date.parse(done.createdAt));
    expect(await countRows(test.conveyor, "jobs", "id = ANY($1) AND status = 'queued'", [dead])).toBe(10);
    expect(await countRows(test.conveyor, "jobs", "id = ANY($1) AND status = 'dead'", [kept])).toBe(3);
  });

  it("takes set_priority and move with their parameter", async () => {
    await jobsIn(test.conveyor, "queued", 3, { queue: "mail" });
    const prioritized = await start(test.keys.admin, { action: "set_priority", filter: { queue: "mail" }, priority: -5 });
    expect(prioritized.statusCode, prioritized.body).toBe(202);
    expect(await ended(test.keys.admin, prioritized.json.id)).toMatchObject({ priority: -5, touched: 3 });
    const moved = await start(test.keys.admin, { action: "move", filter: { queue: "mail" }, queue: "mail.slow" });
    expect(await ended(test.keys.admin, moved.json.id)).toMatchObject({ queue: "mail.slow", touched: 3 });
    expect(await countRows(test.conveyor, "jobs", "queue = 'mail.slow' AND priority = -5")).toBe(3);
  });

  it("answers a problem naming the field for bad input, and stores and changes nothing", async () => {
    await jobsIn(test.conveyor, "dead", 3);
    const before = await snapshot(test.conveyor);
    for (const [body, path, detail] of [
      [{ action: "requeue", filter: { status: "dead" } }, "action", /retry/],
      [{ action: "retry", filter: { statuz: "dead" } }, "filter.statuz", /statuz/],
      [{ action: "retry", filter: { status: "deadd" } }, "filter.status", /status/],
      [{ action: "set_priority", filter: { kind: "item" }, priority: 5000 }, "priority", /priority/],
      [{ action: "move", filter: { kind: "item" }, queue: "no spaces" }, "queue", /queue/],
      [{ action: "retry", filter: {} }, "filter", /all: true/],
      [{ action: "retry", filter: { kind: "item" }, queue: "q" }, "queue", /only for move/],
      [{ action: "move", filter: { kind: "item" } }, "queue", /required for move/],
      [{ action: "retry", filter: { kind: "item" }, extra: 1 }, "extra", /extra/],
    ] as const) {
      const problem = expectProblem(await start(test.keys.admin, body), 422, "VALIDATION");
      expect(problem.errors?.[0]?.path, JSON.stringify(body)).toBe(path);
      expect(problem.detail, JSON.stringify(body)).toMatch(detail);
    }
    expect(await countRows(test.conveyor, "bulk_actions")).toBe(0);
    expect(changedIds(before, await snapshot(test.conveyor))).toEqual([]);
    // The whole table, meant: taken.
    const all = await start(test.keys.admin, { action: "retry", filter: {}, all: true });
    expect(all.statusCode, all.body).toBe(202);
  });
});

describe("tenant keys", () => {
  it("act on, see and cancel only their own tenant's jobs and operations", async () => {
    const acme = await jobsIn(test.conveyor, "queued", 3, { tenant: "acme" });
    const globex = await jobsIn(test.conveyor, "queued", 3, { tenant: "globex" });
    expectProblem(await start(test.keys.acme, { action: "cancel", filter: { tenant: "globex", kind: "item" } }), 403, "FORBIDDEN");
    expect(await countRows(test.conveyor, "bulk_actions")).toBe(0);

    const mine = await start(test.keys.acme, { action: "cancel", filter: { kind: "item" } });
    expect(mine.statusCode, mine.body).toBe(202);
    expect(mine.json).toMatchObject({ tenant: "acme", requestedBy: await keyIdOf(test.keys.acme) });
    expect(await ended(test.keys.acme, mine.json.id)).toMatchObject({ status: "succeeded", touched: 3 });
    expect(await countRows(test.conveyor, "jobs", "id = ANY($1) AND status = 'cancelled'", [acme])).toBe(3);
    expect(await countRows(test.conveyor, "jobs", "id = ANY($1) AND status = 'queued'", [globex])).toBe(3);

    expectProblem(await get(test.keys.globex, mine.json.id), 404, "NOT_FOUND");
    expectProblem(await cancel(test.keys.globex, mine.json.id), 404, "NOT_FOUND");
    expect((await call(test.app, { url: "/v1/bulk-actions", key: test.keys.globex })).json.items).toEqual([]);
    expectProblem(await call(test.app, { url: "/v1/bulk-actions?tenant=acme", key: test.keys.globex }), 403, "FORBIDDEN");
    const adminOnly = await start(test.keys.admin, { action: "purge", filter: { queue: "nowhere" } });
    expectProblem(await get(test.keys.acme, adminOnly.json.id), 404, "NOT_FOUND");
    const acmeList = await call(test.app, { url: "/v1/bulk-actions", key: test.keys.acme });
    expect(acmeList.json.items.map((item: { id: string }) => item.id)).toEqual([mine.json.id]);
    // Admin keys see every tenant's, or the one they name.
    const adminList = await call(test.app, { url: "/v1/bulk-actions", key: test.keys.admin });
    expect(adminList.json.items.map((item: { id: string }) => item.id)).toEqual([adminOnly.json.id, mine.json.id]);
    const named = await call(test.app, { url: "/v1/bulk-actions?tenant=acme", key: test.keys.admin });
    expect(named.json.items.map((item: { id: string }) => item.id)).toEqual([mine.json.id]);
  });
});

describe("cancel, list and the OpenAPI document", () => {
  it("cancels a running operation (202), refuses an ended one (409) and a missing one (404)", async () => {
    tune(test.conveyor, { batchSize: 2, pauseMs: 200 });
    await jobsIn(test.conveyor, "queued", 20);
    const started = await start(test.keys.admin, { action: "set_priority", filter: { kind: "item" }, priority: 1 });
    const asked = await cancel(test.keys.admin, started.json.id);
    expect(asked.statusCode, asked.body).toBe(202);
    expect(asked.json).toMatchObject({ status: "running", cancelRequested: true });
    const done = await ended(test.keys.admin, started.json.id);
    expect(done.status).toBe("cancelled");
    expect(done.touched).toBeLessThan(20);
    expect(await countRows(test.conveyor, "jobs", "priority = 1")).toBe(done.touched);
    expectProblem(await cancel(test.keys.admin, started.json.id), 409, "CONFLICT");
    expectProblem(await cancel(test.keys.admin, "01900000-0000-7000-8000-000000000000"), 404, "NOT_FOUND");
    expectProblem(await get(test.keys.admin, "not-a-uuid"), 400, "INVALID_PARAMETER");
  });

  it("pages operations newest first", async () => {
    const ids: string[] = [];
    for (let n = 0; n < 3; n++) ids.push((await start(test.keys.admin, { action: "purge", filter: { queue: `q${n}` } })).json.id);
    const first = await call(test.app, { url: "/v1/bulk-actions?limit=2", key: test.keys.admin });
    expect(first.json.items.map((item: { id: string }) => item.id)).toEqual([ids[2], ids[1]]);
    const second = await call(test.app, { url: `/v1/bulk-actions?limit=2&cursor=${first.json.nextCursor}`, key: test.keys.admin });
    expect(second.json).toMatchObject({ items: [{ id: ids[0] }], nextCursor: null });
    expectProblem(await call(test.app, { url: "/v1/bulk-actions?limit=0", key: test.keys.admin }), 400, "INVALID_PARAMETER");
  });

  it("documents the routes and the operation's fields", async () => {
    const document = (await call(test.app, { url: "/openapi.json" })).json;
    expect(Object.keys(document.paths)).toEqual(expect.arrayContaining(["/v1/bulk-actions", "/v1/bulk-actions/{id}", "/v1/bulk-actions/{id}/cancel"]));
    const created = document.paths["/v1/bulk-actions"].post.responses["202"].content["application/json"].schema;
    expect(Object.keys(created.properties).sort()).toEqual([...FIELDS].sort());
  });
});

describe("the server's resume sweep", () => {
  it("takes over an operation whose process died and finishes it", async () => {
    const swept = await createApiTest({ bulkActionSweepMs: 100 }, { schema: test.schema });
    try {
      const ids = await jobsIn(test.conveyor, "queued", 5);
      await sql(
        test.conveyor,
        `INSERT INTO {{schema}}.bulk_actions (id, action, filter, status, total, owner, lease_expires_at, touched, last_job_id, states)
         VALUES ('01900000-0000-7000-8000-0000000000aa', 'cancel', '{"kind": "item"}', 'running', 5, 'gone', now() - interval '1 second', 2, $1, '{queued}')`,
        [ids[1]],
      );
      await swept.app.ready(); // as listen() does
      const done = await ended(swept.keys.admin, "01900000-0000-7000-8000-0000000000aa");
      // Two were done before the process died: the walk resumes after its cursor.
      expect(done).toMatchObject({ status: "succeeded", touched: 5 });
      expect(await countRows(test.conveyor, "jobs", "id = ANY($1) AND status = 'cancelled'", [ids.slice(2)])).toBe(3);
      expect(await countRows(test.conveyor, "jobs", "id = ANY($1) AND status = 'queued'", [ids.slice(0, 2)])).toBe(2);
    } finally {
      await swept.cleanup();
    }
  });
});
