import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ApiTest, call, createApiTest, expectProblem, rows } from "./support.js";

let test: ApiTest;
beforeAll(async () => {
  test = await createApiTest();
});
afterAll(() => test.cleanup());

describe("limits per key over HTTP", () => {
  it("reads limits back by the names they are set with, as the library names them", async () => {
    const limits = { concurrency: 2, rateLimit: { count: 7, intervalMs: 1_000 } };
    const set = await call(test.app, { method: "PATCH", url: "/v1/queues/names/key-limits", key: test.keys.admin, body: limits });
    expect(set.statusCode, set.body).toBe(200);
    const library = (await test.conveyor.keyLimits.list("names"))[0]!;
    const status = await call(test.app, { url: "/v1/queues/names/keys/k", key: test.keys.admin });
    for (const read of [set.json, status.json]) {
      expect(read).toMatchObject(limits);
      expect(read).toMatchObject({ concurrency: library.concurrency, rateLimit: library.rateLimit });
    }
    const document = (await call(test.app, { url: "/openapi.json" })).body;
    expect(document).not.toContain("concurrencyLimit");
    await test.conveyor.keyLimits.delete("names");
  });

  it("sets a queue's default and a key's override, lists them, and deletes them (admin key)", async () => {
    const set = await call(test.app, {
      method: "PATCH",
      url: "/v1/queues/webhooks/key-limits",
      key: test.keys.admin,
      body: { concurrency: 5, rateLimit: { count: 100, intervalMs: 60_000 } },
    });
    expect(set.statusCode, set.body).toBe(200);
    expect(set.json).toMatchObject({ queue: "webhooks", key: null, concurrency: 5, rateLimit: { count: 100, intervalMs: 60_000 } });

    // A key with a slash and a colon, URL-encoded in the path.
    const override = await call(test.app, {
      method: "PATCH",
      url: `/v1/queues/webhooks/keys/${encodeURIComponent("host:api.example.com/v2")}/limits`,
      key: test.keys.admin,
      body: { concurrency: 1, throttleMs: 1_000 },
    });
    expect(override.statusCode, override.body).toBe(200);
    expect(override.json).toMatchObject({ key: "host:api.example.com/v2", concurrency: 1, rateLimit: { count: 1, intervalMs: 1_000 } });

    const queues = await call(test.app, { url: "/v1/queues", key: test.keys.admin });
    expect(queues.json.items).toContainEqual(
      expect.objectContaining({ queue: "webhooks", keyLimits: { concurrency: 5, rateLimit: { count: 100, intervalMs: 60_000 } } }),
    );
    const listed = await call(test.app, { url: "/v1/queues/webhooks/key-limits", key: test.keys.admin });
    expect(listed.json.items.map((item: { key: string | null }) => item.key)).toEqual([null, "host:api.example.com/v2"]);
    const all = await call(test.app, { url: "/v1/key-limits", key: test.keys.admin });
    expect(all.json.items.map((item: { queue: string }) => item.queue)).toEqual(["webhooks", "webhooks"]);
    expectProblem(await call(test.app, { url: "/v1/key-limits", key: test.keys.acme }), 403, "FORBIDDEN");

    const removed = await call(test.app, {
      method: "DELETE",
      url: `/v1/queues/webhooks/keys/${encodeURIComponent("host:api.example.com/v2")}/limits`,
      key: test.keys.admin,
    });
    expect(removed.statusCode, removed.body).toBe(204);
    const again = expectProblem(
      await call(test.app, { method: "DELETE", url: "/v1/queues/webhooks/keys/nobody/limits", key: test.keys.admin }),
      404,
      "NOT_FOUND",
    );
    expect(again.detail).toBe('key "nobody" has no limits of its own in queue "webhooks"');
    expect((await call(test.app, { method: "DELETE", url: "/v1/queues/webhooks/key-limits", key: test.keys.admin })).statusCode).toBe(204);
    expect(await test.conveyor.keyLimits.list("webhooks")).toEqual([]);
    // Idempotent: deleting the key limits of a queue that has none is done already.
    expect((await call(test.app, { method: "DELETE", url: "/v1/queues/webhooks/key-limits", key: test.keys.admin })).statusCode).toBe(204);
  });

  it("tells why a key's jobs are not running, and lists the keys with the most jobs waiting", async () => {
    await test.conveyor.keyLimits.set("deliveries", { concurrency: 2 });
    await test.conveyor.enqueueMany([
      ...Array.from({ length: 3 }, () => ({ job: "item", payload: { n: 1 }, queue: "deliveries", limitKey: "a.example" })),
      { job: "item", payload: { n: 2 }, queue: "deliveries", limitKey: "b.example" },
    ]);
    const created = await call(test.app, {
      method: "POST",
      url: "/v1/jobs",
      key: test.keys.admin,
      body: { kind: "item", payload: { n: 3 }, queue: "deliveries", limitKey: "b.example" },
    });
    expect(created.statusCode, created.body).toBe(201);

    const top = await call(test.app, { url: "/v1/queues/deliveries/keys?limit=1", key: test.keys.admin });
    expect(top.statusCode, top.body).toBe(200);
    expect(top.json.items).toEqual([{ key: "a.example", waiting: 3, running: 0, concurrency: 2, rateLimit: null, source: "default" }]);

    const status = await call(test.app, { url: "/v1/queues/deliveries/keys/b.example", key: test.keys.admin });
    expect(status.statusCode, status.body).toBe(200);
    expect(status.json).toMatchObject({ key: "b.example", ready: 2, running: 0, state: "ready", source: "default", window: null });
    expect(status.json.reason).toMatch(/no key limit holds them/);
    await test.conveyor.keyLimits.delete("deliveries");
  });

  it("refuses tenant keys and bad input as problem+json, changing nothing", async () => {
    expectProblem(await call(test.app, { method: "PATCH", url: "/v1/queues/guarded/key-limits", key: test.keys.acme, body: { concurrency: 1 } }), 403, "FORBIDDEN");
    expectProblem(await call(test.app, { url: "/v1/queues/guarded/keys/k", key: test.keys.acme }), 403, "FORBIDDEN");
    expectProblem(await call(test.app, { url: "/v1/queues/guarded/keys" }), 401, "UNAUTHORIZED");
    const cases: Array<[unknown, string]> = [
      [{ concurrency: 0 }, "concurrency"],
      [{ rateLimit: { count: 5 } }, "rateLimit.intervalMs"],
      [{ throttleMs: 0 }, "throttleMs"],
      [{ burst: 1 }, ""],
      [{}, ""],
      [{ throttleMs: 10, rateLimit: null }, ""],
    ];
    for (const [body, path] of cases) {
      const problem = expectProblem(await call(test.app, { method: "PATCH", url: "/v1/queues/guarded/key-limits", key: test.keys.admin, body }), 422, "VALIDATION");
      if (path) expect(problem.errors.map((e: { path: string }) => e.path)).toContain(path);
    }
    expectProblem(await call(test.app, { url: "/v1/queues/guarded/keys?limit=101", key: test.keys.admin }), 400, "INVALID_PARAMETER");
    expectProblem(await call(test.app, { url: `/v1/queues/guarded/keys/${"k".repeat(257)}`, key: test.keys.admin }), 400, "INVALID_PARAMETER");
    const badKey = await call(test.app, { method: "POST", url: "/v1/jobs", key: test.keys.admin, body: { kind: "item", payload: { n: 1 }, limitKey: "" } });
    expectProblem(badKey, 422, "VALIDATION");
    expect(await test.conveyor.keyLimits.list()).toEqual([]);
    // Queue limits and key limits combine on one queue.
    await test.conveyor.queues.setLimits("capped", { concurrency: 1 });
    const both = await call(test.app, { method: "PATCH", url: "/v1/queues/capped/key-limits", key: test.keys.admin, body: { concurrency: 1 } });
    expect(both.statusCode, both.body).toBe(200);
    await test.conveyor.keyLimits.delete("capped");
    await test.conveyor.queues.deleteSettings("capped");
  });

  it("reports the jobs held back by key limits and the keys at their limit on /metrics", async () => {
    await test.conveyor.keyLimits.set("metered", { concurrency: 1 });
    await test.conveyor.enqueueMany([
      ...Array.from({ length: 4 }, () => ({ job: "item", payload: { n: 1 }, queue: "metered", limitKey: "hot" })),
      ...Array.from({ length: 2 }, () => ({ job: "item", payload: { n: 1 }, queue: "metered", limitKey: "warm" })),
      { job: "item", payload: { n: 1 }, queue: "metered", limitKey: "cold" },
    ]);
    // One job of hot and one of warm running (as a worker would hold them): both keys are at their limit.
    await rows(
      test,
      `UPDATE {{schema}}.jobs SET status = 'running', attempts = 1, locked_by = 'w', current_execution_id = gen_random_uuid(),
              lease_expires_at = now() + interval '1 minute', started_at = now()
       WHERE id IN (SELECT DISTINCT ON (limit_key) id FROM {{schema}}.jobs WHERE queue = 'metered' AND limit_key IN ('hot', 'warm'))`,
    );
    const metrics = (await call(test.app, { url: "/metrics" })).body;
    expect(metrics).toMatch(/^conveyor_key_limit_held_jobs\{queue="metered"\} 4$/m);
    expect(metrics).toMatch(/^conveyor_keys_at_limit\{queue="metered"\} 2$/m);
    expect(metrics).toMatch(/^conveyor_key_at_limit_held_jobs\{queue="metered",key="hot"\} 3$/m);
    expect(metrics).toMatch(/^conveyor_key_at_limit_held_jobs\{queue="metered",key="warm"\} 1$/m);
    expect(metrics).not.toMatch(/key="cold"/);
    await rows(test, "DELETE FROM {{schema}}.jobs WHERE queue = 'metered'");
    await test.conveyor.keyLimits.delete("metered");
  });
});
