import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ConflictError, IdempotencyConflictError } from "../packages/core/src/core/errors.js";
import { encodeJson } from "../packages/core/src/core/json.js";
import { countRows, createTestConveyor, type TestConveyor } from "./helpers/database.js";
import { allTestJobs, counters, item, sendEmail } from "./helpers/jobs.js";

// Each test gets a fresh schema: the row counts below are exact.
let test: TestConveyor;
beforeEach(async () => {
  test = await createTestConveyor({ jobs: allTestJobs, poolSize: 10 });
});
afterEach(async () => {
  await test.cleanup();
});

describe("idempotency keys", () => {
  it("return the job the key first created", async () => {
    const first = await test.conveyor.enqueue(item, { n: 1 }, { idempotencyKey: "order-1" });
    const again = await test.conveyor.enqueue(item, { n: 1 }, { idempotencyKey: "order-1" });
    expect(first.created).toBe(true);
    expect(again.created).toBe(false);
    expect(again.id).toBe(first.id);
    expect(await countRows(test.conveyor, "jobs")).toBe(1);
  });

  it("refuse the same key with a different payload", async () => {
    await test.conveyor.enqueue(item, { n: 1 }, { idempotencyKey: "order-2" });
    await expect(test.conveyor.enqueue(item, { n: 2 }, { idempotencyKey: "order-2" })).rejects.toBeInstanceOf(ConflictError);
    expect(await countRows(test.conveyor, "jobs")).toBe(1);
  });

  it("refuse the same key with a different kind", async () => {
    await test.conveyor.enqueue(counters, { n: 1 }, { idempotencyKey: "order-3" });
    const error = await test.conveyor.enqueue(item, { n: 1 }, { idempotencyKey: "order-3" }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConflictError);
    expect((error as ConflictError).code).toBe("CONFLICT");
    expect(await countRows(test.conveyor, "jobs")).toBe(1);
  });

  it("refuse the same key with a different queue, priority or maxAttempts, naming the fields", async () => {
    const first = await test.conveyor.enqueue(item, { n: 1 }, { idempotencyKey: "fields" });
    for (const [options, field] of [
      [{ queue: "other" }, "queue"],
      [{ priority: 7 }, "priority"],
      [{ maxAttempts: item.maxAttempts + 1 }, "maxAttempts"],
    ] as const) {
      const error = await test.conveyor.enqueue(item, { n: 1 }, { idempotencyKey: "fields", ...options }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(IdempotencyConflictError);
      expect(error).toMatchObject({ code: "CONFLICT", idempotencyKey: "fields", jobId: first.id, fields: [field] });
    }
    expect(await countRows(test.conveyor, "jobs")).toBe(1);
  });

  it("treat an option left out and the definition's value as the same request; ignore run time", async () => {
    const first = await test.conveyor.enqueue(item, { n: 1 }, { idempotencyKey: "defaults", delayMs: 60_000 });
    const again = await test.conveyor.enqueue(
      item,
      { n: 1 },
      { idempotencyKey: "defaults", queue: item.queue, priority: item.priority, maxAttempts: item.maxAttempts },
    );
    expect(again).toMatchObject({ id: first.id, created: false });
  });

  it("are per tenant", async () => {
    const a = await test.conveyor.enqueue(item, { n: 1 }, { idempotencyKey: "shared", tenant: "tenant-a" });
    const b = await test.conveyor.enqueue(item, { n: 1 }, { idempotencyKey: "shared", tenant: "tenant-b" });
    expect(a.created && b.created).toBe(true);
    expect(a.id).not.toBe(b.id);
    expect(await countRows(test.conveyor, "jobs")).toBe(2);
  });

  it("give 50 concurrent enqueues one row and one id", async () => {
    const results = await Promise.all(
      Array.from({ length: 50 }, () => test.conveyor.enqueue(sendEmail, { to: "ada@example.com" }, { idempotencyKey: "race" })),
    );
    expect(new Set(results.map((job) => job.id)).size).toBe(1);
    expect(results.filter((job) => job.created)).toHaveLength(1);
    expect(await countRows(test.conveyor, "jobs")).toBe(1);
  });

  it("compare payloads as JSON values, so key order does not matter", async () => {
    const reordered = [{ b: 2, a: 1 }, { a: 1, b: 2 }];
    // The schema keeps the caller's key order, so the two requests really differ as text.
    expect(encodeJson(reordered[0])).not.toBe(encodeJson(reordered[1]));
    const first = await test.conveyor.enqueue(counters, reordered[0]!, { idempotencyKey: "k" });
    const second = await test.conveyor.enqueue(counters, reordered[1]!, { idempotencyKey: "k" });
    expect(second).toMatchObject({ id: first.id, created: false });
    await expect(test.conveyor.enqueue(counters, { a: 1, b: 3 }, { idempotencyKey: "k" })).rejects.toBeInstanceOf(ConflictError);
  });

  it("within one enqueueMany batch: same request once, a different one refused", async () => {
    const jobs = await test.conveyor.enqueueMany([
      { job: item, payload: { n: 1 }, idempotencyKey: "batch" },
      { job: item, payload: { n: 1 }, idempotencyKey: "batch" },
    ]);
    expect(jobs[0]!.id).toBe(jobs[1]!.id);
    const reordered = await test.conveyor.enqueueMany([
      { job: counters, payload: { b: 2, a: 1 }, idempotencyKey: "batch-reordered" },
      { job: counters, payload: { a: 1, b: 2 }, idempotencyKey: "batch-reordered" },
    ]);
    expect(reordered[0]!.id).toBe(reordered[1]!.id);
    await expect(
      test.conveyor.enqueueMany([
        { job: item, payload: { n: 5 }, idempotencyKey: "batch-2" },
        { job: item, payload: { n: 6 }, idempotencyKey: "batch-2" },
      ]),
    ).rejects.toBeInstanceOf(ConflictError);
    await expect(
      test.conveyor.enqueueMany([
        { job: item, payload: { n: 5 }, idempotencyKey: "batch-3" },
        { job: item, payload: { n: 5 }, idempotencyKey: "batch-3", priority: 3 },
      ]),
    ).rejects.toMatchObject({ jobId: null, fields: ["priority"] });
    expect(await countRows(test.conveyor, "jobs")).toBe(2);
  });

  it("a batch mixing rows with and without keys answers each in place", async () => {
    const existing = await test.conveyor.enqueue(item, { n: 7 }, { idempotencyKey: "mixed" });
    const jobs = await test.conveyor.enqueueMany([
      { job: item, payload: { n: 8 } },
      { job: item, payload: { n: 7 }, idempotencyKey: "mixed" },
      { job: item, payload: { n: 9 } },
    ]);
    expect(jobs.map((job) => job.created)).toEqual([true, false, true]);
    expect(jobs[1]!.id).toBe(existing.id);
    expect(jobs.map((job) => job.payload)).toEqual([{ n: 8 }, { n: 7 }, { n: 9 }]);
    const single = await test.conveyor.enqueue(item, { n: 10 });
    expect(single).toMatchObject({ created: true, idempotencyKey: null });
  });

  it("in a batch that also reuses an existing key, refuse everything on a conflict", async () => {
    await test.conveyor.enqueue(item, { n: 1 }, { idempotencyKey: "existing" });
    await expect(
      test.conveyor.enqueueMany([
        { job: item, payload: { n: 100 } },
        { job: item, payload: { n: 2 }, idempotencyKey: "existing" },
      ]),
    ).rejects.toBeInstanceOf(ConflictError);
    expect(await countRows(test.conveyor, "jobs")).toBe(1); // the row without a key was rolled back
  });
});
