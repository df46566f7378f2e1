import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ApiTest, call, createApiTest, expectProblem, rows } from "./support.js";

let test: ApiTest;
beforeAll(async () => {
  test = await createApiTest();
});
afterAll(() => test.cleanup());

const post = (body: unknown, headers: Record<string, string> = {}, key = test.keys.acme) =>
  call(test.app, { method: "POST", url: "/v1/jobs", key, body, headers });

const countWithKey = async (uniqueKey: string) =>
  (await rows(test, "SELECT count(*)::int AS n FROM {{schema}}.jobs WHERE unique_key = $1", [uniqueKey]))[0].n;

describe("POST /v1/jobs with unique", () => {
  it("answers 201 for the job it creates, then 200 with the same job for the same key (keep)", async () => {
    const first = await post({ kind: "item", payload: { n: 1 }, unique: { key: "keep-1" } });
    expect(first.statusCode).toBe(201);
    expect(first.headers["conveyor-unique-outcome"]).toBe("created");
    expect(first.json).toMatchObject({ uniqueKey: "keep-1", payload: { n: 1 } });
    const second = await post({ kind: "item", payload: { n: 2 }, priority: 7, unique: { key: "keep-1" } });
    expect(second.statusCode).toBe(200);
    expect(second.headers["conveyor-unique-outcome"]).toBe("kept");
    expect(second.headers.location).toBeUndefined();
    expect(second.json).toMatchObject({ id: first.json.id, payload: { n: 1 }, priority: 0 });
    expect(await countWithKey("keep-1")).toBe(1);
  });

  it("answers 200 with the replaced job (replace)", async () => {
    const first = await post({ kind: "item", payload: { n: 1 }, unique: { key: "debounce-1", states: ["queued"], onConflict: "replace" } });
    const second = await post({
      kind: "item",
      payload: { n: 2 },
      delayMs: 60_000,
      unique: { key: "debounce-1", states: ["queued"], onConflict: "replace" },
    });
    expect(second.statusCode).toBe(200);
    expect(second.headers["conveyor-unique-outcome"]).toBe("replaced");
    expect(second.json).toMatchObject({ id: first.json.id, payload: { n: 2 } });
    expect(Date.parse(second.json.runAt)).toBeGreaterThan(Date.parse(first.json.runAt));
    const read = await call(test.app, { url: `/v1/jobs/${first.json.id}`, key: test.keys.acme });
    expect(read.json).toMatchObject({ payload: { n: 2 }, uniqueKey: "debounce-1" });
  });

  it("answers 409 problem+json naming the key and the holder (drop), and inserts nothing", async () => {
    const first = await post({ kind: "item", payload: { n: 1 }, unique: { key: "drop-1" } });
    const dropped = await post({ kind: "item", payload: { n: 2 }, unique: { key: "drop-1", onConflict: "drop" } });
    const problem = expectProblem(dropped, 409, "UNIQUE_CONFLICT");
    expect(problem).toMatchObject({ uniqueKey: "drop-1", holderId: first.json.id });
    expect(problem.detail).toContain(first.json.id);
    expect(await countWithKey("drop-1")).toBe(1);
  });

  it("keeps tenants apart", async () => {
    const acme = await post({ kind: "item", payload: { n: 1 }, unique: { key: "tenant-1", onConflict: "drop" } });
    const globex = await post({ kind: "item", payload: { n: 1 }, unique: { key: "tenant-1", onConflict: "drop" } }, {}, test.keys.globex);
    expect([acme.statusCode, globex.statusCode]).toEqual([201, 201]);
    expect(acme.json.id).not.toBe(globex.json.id);
  });

  it("lets the Idempotency-Key answer first: a replay is 200 with the job it created", async () => {
    const body = { kind: "item", payload: { n: 1 }, unique: { key: "idem-1", onConflict: "drop" } };
    const first = await post(body, { "idempotency-key": "req-1" });
    const replay = await post(body, { "idempotency-key": "req-1" });
    expect(first.statusCode).toBe(201);
    expect(replay.statusCode).toBe(200);
    expect(replay.json.id).toBe(first.json.id);
    expect(replay.headers["conveyor-unique-outcome"]).toBeUndefined();
    // A new idempotency key meets the held unique key.
    expectProblem(await post(body, { "idempotency-key": "req-2" }), 409, "UNIQUE_CONFLICT");
  });

  it("refuses bad unique options with 422 naming the field", async () => {
    const cases: Array<[unknown, string]> = [
      [{ key: "" }, "unique.key"],
      [{ key: "k", states: ["dead"] }, "unique.states.0"],
      [{ key: "k", states: [] }, "unique.states"],
      [{ key: "k", onConflict: "merge" }, "unique.onConflict"],
      [{ key: "k", extra: true }, "unique.extra"],
      [{ key: "k", states: ["running"] }, "unique.states"],
    ];
    for (const [unique, path] of cases) {
      const problem = expectProblem(await post({ kind: "item", payload: { n: 1 }, unique }), 422, "VALIDATION");
      expect(problem.errors.map((e: { path: string }) => e.path), JSON.stringify(unique)).toContain(path);
    }
  });
});

describe("POST /v1/jobs/batch with unique", () => {
  it("settles items with the same key in order, and shows uniqueKey", async () => {
    const response = await call(test.app, {
      method: "POST",
      url: "/v1/jobs/batch",
      key: test.keys.acme,
      body: {
        jobs: [
          { kind: "item", payload: { n: 1 }, unique: { key: "batch-1", onConflict: "replace" } },
          { kind: "item", payload: { n: 2 }, unique: { key: "batch-1", onConflict: "replace" } },
          { kind: "item", payload: { n: 3 } },
          { kind: "item", payload: { n: 4 }, unique: { key: "batch-1" } },
        ],
      },
    });
    expect(response.statusCode).toBe(201);
    const [a, b, c, d] = response.json.jobs;
    expect(b).toMatchObject({ id: a.id, payload: { n: 2 }, uniqueKey: "batch-1" });
    expect(c).toMatchObject({ uniqueKey: null });
    expect(d).toMatchObject({ id: a.id, payload: { n: 2 } });
    // Each item's outcome, as the single-job route gives it in its header.
    expect(response.json.outcomes).toEqual(["created", "replaced", "created", "kept"]);
    expect(await countWithKey("batch-1")).toBe(1);
  });

  it("answers 409 UNIQUE_CONFLICT for a drop item and inserts none of the batch", async () => {
    await post({ kind: "item", payload: { n: 1 }, unique: { key: "batch-drop" } });
    const before = (await rows(test, "SELECT count(*)::int AS n FROM {{schema}}.jobs"))[0].n;
    const response = await call(test.app, {
      method: "POST",
      url: "/v1/jobs/batch",
      key: test.keys.acme,
      body: {
        jobs: [
          { kind: "item", payload: { n: 2 } },
          { kind: "item", payload: { n: 3 }, unique: { key: "batch-drop", onConflict: "drop" } },
        ],
      },
    });
    expectProblem(response, 409, "UNIQUE_CONFLICT");
    expect((await rows(test, "SELECT count(*)::int AS n FROM {{schema}}.jobs"))[0].n).toBe(before);
  });
});
