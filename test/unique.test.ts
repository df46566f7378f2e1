import pino from "pino";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Conveyor } from "../packages/core/src/conveyor.js";
import { ConflictError, UniqueJobConflictError, ValidationError } from "../packages/core/src/core/errors.js";
import type { ClaimedJob } from "../packages/core/src/core/model.js";
import { countRows, createTestConveyor, storeOf, type TestConveyor, testDatabaseUrl } from "./helpers/database.js";
import { allTestJobs, counters, item } from "./helpers/jobs.js";

// Each test gets a fresh schema: the row counts below are exact.
let test: TestConveyor;
beforeEach(async () => {
  test = await createTestConveyor({ jobs: allTestJobs, poolSize: 10 });
});
afterEach(async () => {
  await test.cleanup();
});

const sql = (text: string, values: unknown[] = []) => test.conveyor.pool.query(text.replaceAll("{{schema}}", `"${test.schema}"`), values);

/** Claim every ready job as the worker would (the same statement), with a lease of `leaseMs`. */
const claimAll = (leaseMs = 60_000): Promise<ClaimedJob[]> => storeOf(test.conveyor).jobClaim("test-worker", 100, ["item", "counters"], null, leaseMs);

const getJob = async (id: string) => (await test.conveyor.getJob(id))!;

describe("unique jobs: keep (the default)", () => {
  it("creates the first job, then returns it unchanged for the same key", async () => {
    const first = await test.conveyor.enqueue(item, { n: 1 }, { unique: { key: "sync:42" } });
    expect(first).toMatchObject({ created: true, unique: "created", uniqueKey: "sync:42", payload: { n: 1 } });
    const second = await test.conveyor.enqueue(item, { n: 2 }, { unique: { key: "sync:42" }, priority: 9, delayMs: 60_000 });
    expect(second).toMatchObject({ id: first.id, created: false, unique: "kept", payload: { n: 1 }, priority: 0 });
    expect(second.runAt).toEqual(first.runAt);
    expect(await countRows(test.conveyor, "jobs")).toBe(1);
  });

  it("leaves ordinary jobs without a key", async () => {
    const job = await test.conveyor.enqueue(item, { n: 1 });
    expect(job.uniqueKey).toBeNull();
    expect(job.unique).toBeUndefined();
    expect((await getJob(job.id)).uniqueKey).toBeNull();
  });

  it("keeps tenants apart", async () => {
    const a = await test.conveyor.enqueue(item, { n: 1 }, { tenant: "a", unique: { key: "k" } });
    const b = await test.conveyor.enqueue(item, { n: 1 }, { tenant: "b", unique: { key: "k" } });
    expect(a.created && b.created).toBe(true);
    expect(a.id).not.toBe(b.id);
    expect((await test.conveyor.enqueue(item, { n: 2 }, { tenant: "a", unique: { key: "k" } })).id).toBe(a.id);
  });

  it("gives 50 concurrent enqueues from separate clients exactly one job", async () => {
    const clients = Array.from({ length: 5 }, () => newClient());
    try {
      const results = await Promise.all(
        Array.from({ length: 50 }, (_, i) => clients[i % clients.length]!.enqueue(item, { n: i }, { unique: { key: "race" } })),
      );
      expect(results.filter((job) => job.created)).toHaveLength(1);
      expect(results.filter((job) => job.unique === "kept")).toHaveLength(49);
      expect(new Set(results.map((job) => job.id)).size).toBe(1);
      expect(await countRows(test.conveyor, "jobs")).toBe(1);
    } finally {
      await Promise.all(clients.map((client) => client.close()));
    }
  });
});

describe("unique jobs: replace (debounce)", () => {
  it("replaces the payload and run time of a queued holder, and its priority only when given", async () => {
    const first = await test.conveyor.enqueue(item, { n: 1 }, { unique: { key: "d", onConflict: "replace" }, delayMs: 1_000 });
    const later = new Date(Date.now() + 3_600_000);
    const second = await test.conveyor.enqueue(item, { n: 2 }, { unique: { key: "d", onConflict: "replace" }, runAt: later });
    expect(second).toMatchObject({ id: first.id, created: false, unique: "replaced", payload: { n: 2 }, priority: 0 });
    expect(second.runAt).toEqual(later);
    const third = await test.conveyor.enqueue(item, { n: 3 }, { unique: { key: "d", onConflict: "replace" }, priority: -5 });
    expect(third).toMatchObject({ id: first.id, unique: "replaced", payload: { n: 3 }, priority: -5 });
    expect(await getJob(first.id)).toMatchObject({ payload: { n: 3 }, priority: -5, status: "queued", uniqueKey: "d" });
    expect(await countRows(test.conveyor, "jobs")).toBe(1);
  });

  it("replaces a retrying holder", async () => {
    const first = await test.conveyor.enqueue(item, { n: 1 }, { unique: { key: "d" } });
    await sql("UPDATE {{schema}}.jobs SET status = 'retrying', attempts = 1 WHERE id = $1", [first.id]);
    const second = await test.conveyor.enqueue(item, { n: 2 }, { unique: { key: "d", onConflict: "replace" } });
    expect(second).toMatchObject({ id: first.id, unique: "replaced", payload: { n: 2 }, status: "retrying", attempts: 1 });
  });

  it("keeps a running holder as it is", async () => {
    const first = await test.conveyor.enqueue(item, { n: 1 }, { unique: { key: "d", onConflict: "replace" } });
    await claimAll();
    const second = await test.conveyor.enqueue(item, { n: 2 }, { unique: { key: "d", onConflict: "replace" } });
    expect(second).toMatchObject({ id: first.id, created: false, unique: "kept", status: "running", payload: { n: 1 } });
    expect(await countRows(test.conveyor, "jobs")).toBe(1);
  });

  it("with states [queued], queues a new job behind a running one", async () => {
    const options = { unique: { key: "d", states: ["queued" as const], onConflict: "replace" as const } };
    const first = await test.conveyor.enqueue(item, { n: 1 }, options);
    const [claimed] = await claimAll();
    expect(claimed!.id).toBe(first.id);
    expect(await test.conveyor.getJob(first.id)).toMatchObject({ status: "running", uniqueKey: null });
    const second = await test.conveyor.enqueue(item, { n: 2 }, options);
    expect(second).toMatchObject({ created: true, unique: "created", uniqueKey: "d" });
    const third = await test.conveyor.enqueue(item, { n: 3 }, options);
    expect(third).toMatchObject({ id: second.id, unique: "replaced", payload: { n: 3 } });
  });

  it("refuses to replace a holder of another kind", async () => {
    await test.conveyor.enqueue(counters, { a: 1 }, { unique: { key: "shared" } });
    await expect(test.conveyor.enqueue(item, { n: 1 }, { unique: { key: "shared", onConflict: "replace" } })).rejects.toBeInstanceOf(
      ConflictError,
    );
    expect(await countRows(test.conveyor, "jobs")).toBe(1);
  });

  it("leaves 50 concurrent enqueues from separate clients one job carrying the last payload written", async () => {
    const clients = Array.from({ length: 5 }, () => newClient());
    try {
      const results = await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          clients[i % clients.length]!.enqueue(item, { n: i }, { unique: { key: "debounce", onConflict: "replace" } }),
        ),
      );
      expect(results.filter((job) => job.unique === "created")).toHaveLength(1);
      expect(results.filter((job) => job.unique === "replaced")).toHaveLength(49);
      expect(new Set(results.map((job) => job.id)).size).toBe(1);
      expect(await countRows(test.conveyor, "jobs")).toBe(1);
      // Replacements of one row are serialised by its lock; updated_at records their order.
      const last = results.reduce((a, b) => (b.updatedAt.getTime() > a.updatedAt.getTime() ? b : a));
      expect((await getJob(results[0]!.id)).payload).toEqual(last.payload);
    } finally {
      await Promise.all(clients.map((client) => client.close()));
    }
  });
});

describe("unique jobs: drop", () => {
  it("throws UniqueJobConflictError naming the holder, and inserts nothing", async () => {
    const first = await test.conveyor.enqueue(item, { n: 1 }, { unique: { key: "once", onConflict: "drop" } });
    const error = await test.conveyor.enqueue(item, { n: 2 }, { unique: { key: "once", onConflict: "drop" } }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UniqueJobConflictError);
    expect(error).toBeInstanceOf(ConflictError);
    expect(error).toMatchObject({ code: "CONFLICT", uniqueKey: "once", holderId: first.id });
    expect((error as Error).message).toContain(first.id);
    expect(await countRows(test.conveyor, "jobs")).toBe(1);
    expect((await getJob(first.id)).payload).toEqual({ n: 1 });
  });
});

describe("unique keys are released when the job leaves its states", () => {
  const key = { unique: { key: "k" } };

  it("on success", async () => {
    const job = await test.conveyor.enqueue(item, { n: 1 }, key);
    const [claimed] = await claimAll();
    expect((await test.conveyor.getJob(job.id))!.uniqueKey).toBe("k"); // running is one of the default states
    await storeOf(test.conveyor).jobComplete([{ jobId: job.id, executionId: claimed!.executionId, result: null }]);
    expect(await getJob(job.id)).toMatchObject({ status: "succeeded", uniqueKey: null });
    expect(await test.conveyor.enqueue(item, { n: 2 }, key)).toMatchObject({ created: true, uniqueKey: "k" });
  });

  it("on failure: held while retrying (a default state), released when dead, and not taken back on requeue", async () => {
    const job = await test.conveyor.enqueue(item, { n: 1 }, key);
    let [claimed] = await claimAll();
    const fail = (permanent: boolean) =>
      storeOf(test.conveyor).jobEndAttempts([
        permanent
          ? { jobId: job.id, executionId: claimed!.executionId, outcome: "failed", error: null, event: "permanent_error", delayMs: 0 }
          : { jobId: job.id, executionId: claimed!.executionId, outcome: "failed", error: null, event: "attempt_failed", delayMs: 0 },
      ]);
    expect((await fail(false))[0]).toMatchObject({ status: "retrying", uniqueKey: "k" });
    [claimed] = await claimAll();
    expect((await fail(true))[0]).toMatchObject({ status: "dead", uniqueKey: null });
    const next = await test.conveyor.enqueue(item, { n: 2 }, key);
    expect(next.created).toBe(true);
    const [entry] = (await test.conveyor.deadLetters.list()).items;
    const requeued = await test.conveyor.deadLetters.requeue(entry!.id);
    expect(requeued).toMatchObject({ id: job.id, status: "queued", uniqueKey: null });
    expect(await getJob(next.id)).toMatchObject({ uniqueKey: "k" });
  });

  it("on retry, when retrying is not one of its states", async () => {
    const job = await test.conveyor.enqueue(item, { n: 1 }, { unique: { key: "k", states: ["queued", "running"] } });
    const [claimed] = await claimAll();
    const [ended] = await storeOf(test.conveyor).jobEndAttempts([
      { jobId: job.id, executionId: claimed!.executionId, outcome: "failed", error: null, event: "attempt_failed", delayMs: 60_000 },
    ]);
    expect(ended).toMatchObject({ status: "retrying", uniqueKey: null });
    expect((await test.conveyor.enqueue(item, { n: 2 }, key)).created).toBe(true);
  });

  it("on cancel", async () => {
    const job = await test.conveyor.enqueue(item, { n: 1 }, key);
    expect((await test.conveyor.cancel(job.id)).job).toMatchObject({ status: "cancelled", uniqueKey: null });
    expect((await test.conveyor.enqueue(item, { n: 2 }, key)).created).toBe(true);
  });

  it("on reclaim into the dead-letter queue; a reclaim back to retrying keeps it", async () => {
    const dying = await test.conveyor.enqueue(item, { n: 1 }, { ...key, maxAttempts: 1 });
    const living = await test.conveyor.enqueue(item, { n: 2 }, { unique: { key: "other" } });
    await claimAll(500);
    await sql("UPDATE {{schema}}.jobs SET lease_expires_at = now() - interval '1 second'");
    const reclaimed = await storeOf(test.conveyor).jobReclaimExpired(100);
    expect(reclaimed.find((job) => job.id === dying.id)).toMatchObject({ status: "dead", uniqueKey: null });
    expect(reclaimed.find((job) => job.id === living.id)).toMatchObject({ status: "retrying", uniqueKey: "other" });
    expect((await test.conveyor.enqueue(item, { n: 3 }, key)).created).toBe(true);
  });

  it("on success under a real worker", async () => {
    const job = await test.conveyor.enqueue(item, { n: 1 }, key);
    const worker = test.conveyor.worker({ pollIntervalMs: 50 });
    await worker.start();
    try {
      // Woken by the end's own notification, at its commit: no sleeping between reads.
      expect(await test.conveyor.waitFor(job.id, { timeoutMs: 20_000 })).toMatchObject({ status: "succeeded", uniqueKey: null });
    } finally {
      await worker.stop();
    }
    expect((await getJob(job.id)).uniqueKey).toBeNull();
    expect((await test.conveyor.enqueue(item, { n: 2 }, key)).created).toBe(true);
  });
});

describe("unique keys with idempotency keys", () => {
  it("let the idempotency key answer first: a replay returns the job it created, unchanged", async () => {
    const options = { idempotencyKey: "req-1", unique: { key: "k", onConflict: "replace" as const }, delayMs: 60_000 };
    const first = await test.conveyor.enqueue(item, { n: 1 }, options);
    const replay = await test.conveyor.enqueue(item, { n: 1 }, options);
    expect(replay).toMatchObject({ id: first.id, created: false, payload: { n: 1 } });
    expect(replay.unique).toBeUndefined();
    expect(replay.updatedAt).toEqual(first.updatedAt); // not replaced
    await expect(test.conveyor.enqueue(item, { n: 2 }, options)).rejects.toBeInstanceOf(ConflictError);
  });

  it("return the job the idempotency key created even after it released the unique key", async () => {
    const first = await test.conveyor.enqueue(item, { n: 1 }, { idempotencyKey: "req-2", unique: { key: "k" } });
    await test.conveyor.cancel(first.id);
    const again = await test.conveyor.enqueue(item, { n: 1 }, { idempotencyKey: "req-2", unique: { key: "k" } });
    expect(again).toMatchObject({ id: first.id, created: false, status: "cancelled" });
    expect(await countRows(test.conveyor, "jobs")).toBe(1);
  });

  it("settle by the unique key when the idempotency key is new (and store no job for it)", async () => {
    const first = await test.conveyor.enqueue(item, { n: 1 }, { idempotencyKey: "req-3", unique: { key: "k" } });
    const other = await test.conveyor.enqueue(item, { n: 2 }, { idempotencyKey: "req-4", unique: { key: "k" } });
    expect(other).toMatchObject({ id: first.id, created: false, unique: "kept", idempotencyKey: "req-3" });
    expect(await countRows(test.conveyor, "jobs")).toBe(1);
  });
});

describe("unique jobs in enqueueMany", () => {
  it("settle items with the same key like sequential enqueues, in input order", async () => {
    const jobs = await test.conveyor.enqueueMany([
      { job: item, payload: { n: 0 } },
      { job: item, payload: { n: 1 }, unique: { key: "a" } },
      { job: item, payload: { n: 2 }, unique: { key: "a" } },
      { job: item, payload: { n: 3 } },
      { job: item, payload: { n: 4 }, unique: { key: "b", onConflict: "replace" } },
      { job: item, payload: { n: 5 }, unique: { key: "b", onConflict: "replace" } },
      { job: item, payload: { n: 6 } },
    ]);
    expect(jobs.map((job) => job.unique)).toEqual([undefined, "created", "kept", undefined, "created", "replaced", undefined]);
    expect(jobs[2]!.id).toBe(jobs[1]!.id);
    expect(jobs[5]).toMatchObject({ id: jobs[4]!.id, payload: { n: 5 } });
    expect(jobs.map((job) => job.created)).toEqual([true, true, false, true, true, false, true]);
    expect(await countRows(test.conveyor, "jobs")).toBe(5);
  });

  it("refuse the whole batch when a drop item meets a holder", async () => {
    await test.conveyor.enqueue(item, { n: 0 }, { unique: { key: "taken" } });
    await expect(
      test.conveyor.enqueueMany([
        { job: item, payload: { n: 1 } },
        { job: item, payload: { n: 2 }, unique: { key: "new" } },
        { job: item, payload: { n: 3 }, unique: { key: "taken", onConflict: "drop" } },
      ]),
    ).rejects.toBeInstanceOf(UniqueJobConflictError);
    expect(await countRows(test.conveyor, "jobs")).toBe(1);
  });
});

describe("bad unique options", () => {
  const refused = async (unique: unknown, path: string) => {
    const error = await test.conveyor.enqueue(item, { n: 1 }, { unique: unique as never }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).issues.map((issue) => issue.path)).toEqual([path]);
  };

  it("are refused with ValidationError naming the field, and insert nothing", async () => {
    await refused(null, "unique");
    await refused("k", "unique");
    await refused({}, "unique.key");
    await refused({ key: "" }, "unique.key");
    await refused({ key: "x".repeat(256) }, "unique.key");
    await refused({ key: "a\u0000b" }, "unique.key");
    await refused({ key: "k", states: [] }, "unique.states");
    await refused({ key: "k", states: "queued" }, "unique.states");
    await refused({ key: "k", states: ["queued", "succeeded"] }, "unique.states.1");
    await refused({ key: "k", states: ["running"] }, "unique.states");
    await refused({ key: "k", onConflict: "merge" }, "unique.onConflict");
    expect(await countRows(test.conveyor, "jobs")).toBe(0);
  });

  it("name the item in enqueueMany", async () => {
    const error = await test.conveyor
      .enqueueMany([{ job: item, payload: { n: 1 } }, { job: item, payload: { n: 2 }, unique: { key: "" } }])
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).issues[0]!.path).toBe("jobs.1.unique.key");
  });

  it("are refused by the database too", async () => {
    const insert = (key: string | null, states: string[], status = "queued") =>
      sql(
        `INSERT INTO {{schema}}.jobs (id, tenant, queue, kind, payload, max_attempts, unique_key, unique_states, status, finished_at)
         VALUES (gen_random_uuid(), 'default', 'default', 'item', '{}', 1, $1, $2, $3,
                 CASE WHEN $3 IN ('succeeded', 'cancelled', 'dead') THEN now() END)`,
        [key, states, status],
      );
    await expect(insert(null, [])).rejects.toMatchObject({ constraint: "jobs_unique_states_valid" });
    await expect(insert(null, ["queued", "dead"])).rejects.toMatchObject({ constraint: "jobs_unique_states_valid" });
    await expect(insert(null, ["running"])).rejects.toMatchObject({ constraint: "jobs_unique_states_valid" });
    await expect(insert("", ["queued"])).rejects.toMatchObject({ constraint: "jobs_unique_key_bounded" });
    await expect(insert("k", ["queued"], "succeeded")).rejects.toMatchObject({ constraint: "jobs_unique_key_held_in_state" });
    await expect(insert("k", ["queued"])).resolves.toMatchObject({ rowCount: 1 });
    await expect(insert("k", ["queued"])).rejects.toMatchObject({ constraint: "jobs_unique_key_idx" });
  });
});

function newClient(): Conveyor {
  return new Conveyor({
    connectionString: testDatabaseUrl(),
    schema: test.schema,
    jobs: allTestJobs,
    poolSize: 10,
    logger: pino({ level: "silent" }),
  });
}
