import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ApiTest, call, createApiTest, expectProblem } from "./support.js";

let test: ApiTest;
beforeAll(async () => {
  test = await createApiTest();
});
afterAll(() => test.cleanup());

describe("queue and tenant settings over HTTP", () => {
  it("pauses, limits and resumes a queue (admin key), and the queue list shows it", async () => {
    const paused = await call(test.app, { method: "POST", url: "/v1/queues/mail/pause", key: test.keys.admin });
    expect(paused.statusCode).toBe(200);
    expect(paused.json).toMatchObject({ queue: "mail", paused: true, concurrency: null, rateLimit: null });

    const limited = await call(test.app, {
      method: "PATCH",
      url: "/v1/queues/mail",
      key: test.keys.admin,
      body: { concurrency: 3, rateLimit: { count: 10, intervalMs: 1000 } },
    });
    expect(limited.statusCode).toBe(200);
    expect(limited.json).toMatchObject({ queue: "mail", paused: true, concurrency: 3, rateLimit: { count: 10, intervalMs: 1000 } });

    const listed = await call(test.app, { url: "/v1/queues", key: test.keys.admin });
    expect(listed.json.items).toContainEqual(
      expect.objectContaining({ queue: "mail", paused: true, concurrency: 3, rateLimit: { count: 10, intervalMs: 1000 } }),
    );

    const resumed = await call(test.app, { method: "POST", url: "/v1/queues/mail/resume", key: test.keys.admin });
    expect(resumed.json).toMatchObject({ paused: false, concurrency: 3 });
    const cleared = await call(test.app, { method: "PATCH", url: "/v1/queues/mail", key: test.keys.admin, body: { rateLimit: null } });
    expect(cleared.json).toMatchObject({ concurrency: 3, rateLimit: null });
  });

  it("deletes the settings a pause or PATCH created on a queue with no jobs (a mistyped name), and 404s when there are none", async () => {
    const typo = "mial";
    expect((await call(test.app, { method: "POST", url: `/v1/queues/${typo}/pause`, key: test.keys.admin })).statusCode).toBe(200);
    expect((await call(test.app, { method: "PATCH", url: `/v1/queues/${typo}`, key: test.keys.admin, body: { concurrency: 1 } })).statusCode).toBe(200);
    expect((await call(test.app, { url: "/v1/queues", key: test.keys.admin })).json.items.map((q: { queue: string }) => q.queue)).toContain(typo);

    expectProblem(await call(test.app, { method: "DELETE", url: `/v1/queues/${typo}`, key: test.keys.acme }), 403, "FORBIDDEN");
    const deleted = await call(test.app, { method: "DELETE", url: `/v1/queues/${typo}`, key: test.keys.admin });
    expect(deleted.statusCode, deleted.body).toBe(204);
    expect(deleted.body).toBe("");
    expect((await test.conveyor.queues.listSettings()).map((q) => q.queue)).not.toContain(typo);
    expect((await call(test.app, { url: "/v1/queues", key: test.keys.admin })).json.items.map((q: { queue: string }) => q.queue)).not.toContain(typo);

    const again = expectProblem(await call(test.app, { method: "DELETE", url: `/v1/queues/${typo}`, key: test.keys.admin }), 404, "NOT_FOUND");
    expect(again.detail).toBe('queue "mial" has no settings to delete');
    expectProblem(await call(test.app, { method: "DELETE", url: "/v1/queues/bad%20name", key: test.keys.admin }), 400, "INVALID_PARAMETER");
  });

  it("deleting a used queue's settings resumes it and keeps its jobs", async () => {
    const job = await test.conveyor.enqueue("item", { n: 1 }, { queue: "kept" });
    await test.conveyor.queues.pause("kept");
    expect((await call(test.app, { method: "DELETE", url: "/v1/queues/kept", key: test.keys.admin })).statusCode).toBe(204);
    const listed = (await call(test.app, { url: "/v1/queues", key: test.keys.admin })).json.items;
    expect(listed).toContainEqual(expect.objectContaining({ queue: "kept", paused: false, concurrency: null, counts: expect.objectContaining({ queued: 1 }) }));
    expect((await test.conveyor.getJob(job.id))?.status).toBe("queued");
  });

  it("caps a tenant", async () => {
    const response = await call(test.app, { method: "PATCH", url: "/v1/tenants/acme", key: test.keys.admin, body: { concurrency: 2 } });
    expect(response.statusCode).toBe(200);
    expect(response.json).toMatchObject({ tenant: "acme", concurrency: 2 });
    expect(await test.conveyor.queues.listTenantSettings()).toMatchObject([{ tenant: "acme", concurrency: 2 }]);
  });

  it("refuses tenant keys with 403 and changes nothing", async () => {
    expectProblem(await call(test.app, { method: "POST", url: "/v1/queues/guarded/pause", key: test.keys.acme }), 403, "FORBIDDEN");
    expectProblem(await call(test.app, { method: "PATCH", url: "/v1/queues/guarded", key: test.keys.acme, body: { concurrency: 1 } }), 403, "FORBIDDEN");
    expectProblem(await call(test.app, { method: "PATCH", url: "/v1/tenants/acme", key: test.keys.acme, body: { concurrency: null } }), 403, "FORBIDDEN");
    expectProblem(await call(test.app, { method: "POST", url: "/v1/queues/guarded/pause" }), 401, "UNAUTHORIZED");
    expect((await test.conveyor.queues.listSettings()).map((s) => s.queue)).not.toContain("guarded");
  });

  it("refuses bad input as problem+json naming the field", async () => {
    const cases: Array<[string, unknown, string]> = [
      ["/v1/queues/mail", { concurrency: 0 }, "concurrency"],
      ["/v1/queues/mail", { rateLimit: { count: 5 } }, "rateLimit.intervalMs"],
      ["/v1/queues/mail", { burst: 1 }, ""],
      ["/v1/tenants/acme", { concurrency: -1 }, "concurrency"],
    ];
    for (const [url, body, path] of cases) {
      const problem = expectProblem(await call(test.app, { method: "PATCH", url, key: test.keys.admin, body }), 422, "VALIDATION");
      if (path) expect(problem.errors.map((e: { path: string }) => e.path)).toContain(path);
    }
    expectProblem(await call(test.app, { method: "PATCH", url: "/v1/queues/mail", key: test.keys.admin, body: {} }), 422, "VALIDATION");
    const badName = expectProblem(await call(test.app, { method: "POST", url: "/v1/queues/bad%20name/pause", key: test.keys.admin }), 400, "INVALID_PARAMETER");
    expect(badName.detail).toContain("name");
  });
});
