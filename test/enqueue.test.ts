import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ENQUEUE_CHUNK_ROWS } from "../packages/core/src/core/defaults.js";
import { UniqueJobConflictError, ValidationError } from "../packages/core/src/core/errors.js";
import { uuidv7 } from "../packages/core/src/core/ids.js";
import type { EnqueueManyItem } from "../packages/core/src/client/job-enqueuer.js";
import { connectTestClient, countRows, createTestConveyor, type TestConveyor } from "./helpers/database.js";
import { allTestJobs, counters, item, sendEmail } from "./helpers/jobs.js";

let test: TestConveyor;
beforeAll(async () => {
  test = await createTestConveyor({ jobs: allTestJobs });
});
afterAll(async () => {
  await test.cleanup();
});

/** The database clock, which run_at is computed with. */
async function dbNow(): Promise<Date> {
  const { rows } = await test.conveyor.pool.query<{ now: Date }>("SELECT clock_timestamp() AS now");
  return rows[0]!.now;
}

describe("enqueue", () => {
  it("stores the schema's parsed output, with the definition's defaults", async () => {
    const job = await test.conveyor.enqueue(sendEmail, { to: "  Ada@Example.COM " });
    expect(job.created).toBe(true);
    expect(job.payload).toEqual({ to: "ada@example.com", subject: "(no subject)" });
    const { rows } = await test.conveyor.pool.query(`SELECT * FROM "${test.schema}".jobs WHERE id = $1`, [job.id]);
    expect(rows[0]).toMatchObject({
      kind: "email.send",
      payload: { to: "ada@example.com", subject: "(no subject)" },
      status: "queued",
      tenant: "default",
      queue: "mail",
      priority: 5,
      max_attempts: 7,
      attempts: 0,
      idempotency_key: null,
    });
  });

  it("applies every option", async () => {
    const runAt = new Date(Date.now() + 3_600_000);
    runAt.setMilliseconds(0);
    const job = await test.conveyor.enqueue(
      sendEmail,
      { to: "grace@example.com", subject: "hi" },
      { runAt, priority: -3, queue: "urgent", maxAttempts: 2, tenant: "acme", idempotencyKey: "welcome-grace" },
    );
    expect(job).toMatchObject({ priority: -3, queue: "urgent", maxAttempts: 2, tenant: "acme", idempotencyKey: "welcome-grace" });
    expect(job.runAt.getTime()).toBe(runAt.getTime());
    const stored = await test.conveyor.getJob(job.id);
    expect(stored).toMatchObject({ priority: -3, queue: "urgent", maxAttempts: 2, tenant: "acme", idempotencyKey: "welcome-grace" });
    expect(stored!.runAt.getTime()).toBe(runAt.getTime());
  });

  it("returns the job exactly as the database stored it, one at a time and in batches", async () => {
    // The insert returns only the columns the database decides (id, run_at,
    // created_at) and the rest is filled in from the input: this is the check
    // that the two never drift apart.
    const runAt = new Date(Date.now() + 60_000 + 0.7);
    const single = [
      await test.conveyor.enqueue(sendEmail, { to: "a@example.com" }),
      await test.conveyor.enqueue(item, { n: 1 }, { delayMs: 1_234, priority: 9, queue: "q1", tenant: "t1", idempotencyKey: "same-1" }),
      await test.conveyor.enqueue(counters, { bb: 1, a: 2.5 }, { runAt, maxAttempts: 1 }),
    ];
    const batch = await test.conveyor.enqueueMany([
      { job: sendEmail, payload: { to: "b@example.com" } },
      { job: item, payload: { n: 2 }, delayMs: 5, idempotencyKey: "same-2", tenant: "t2" },
      { job: item, payload: { n: 3 }, runAt, priority: -4 },
    ]);
    // Without keys nothing is read back: the client computes run_at and created_at from the statement's now().
    const keyless = await test.conveyor.enqueueMany([
      { job: sendEmail, payload: { to: "c@example.com" }, queue: "q2" },
      { job: item, payload: { n: 4 }, delayMs: 1_234.5678 },
      { job: item, payload: { n: 5 }, delayMs: 0.0004 },
      { job: counters, payload: { a: 1 }, runAt, maxAttempts: 2 },
    ]);
    for (const job of [...single, ...batch, ...keyless]) {
      expect(job.created).toBe(true);
      const { executions, requeues, ...stored } = (await test.conveyor.getJob(job.id))!;
      expect(executions).toEqual([]);
      expect(requeues).toEqual([]);
      const { created, ...returned } = job;
      expect(returned).toStrictEqual(stored);
    }
  });

  it("runs a delayed job delayMs after enqueue, by the database clock", async () => {
    const delayMs = 45_000;
    const before = await dbNow();
    const job = await test.conveyor.enqueue(item, { n: 1 }, { delayMs });
    const after = await dbNow();
    expect(job.runAt.getTime()).toBeGreaterThanOrEqual(before.getTime() + delayMs);
    expect(job.runAt.getTime()).toBeLessThanOrEqual(after.getTime() + delayMs);
    // Without a delay, run_at is the insert time.
    const now = await test.conveyor.enqueue(item, { n: 2 });
    expect(now.runAt.getTime()).toBeLessThanOrEqual((await dbNow()).getTime());
  });

  it("enqueues by kind name with the registered schema", async () => {
    const job = await test.conveyor.enqueue("email.send", { to: "Linus@Example.com" });
    expect(job.kind).toBe("email.send");
    expect(job.payload).toEqual({ to: "linus@example.com", subject: "(no subject)" });
  });

  it("is typed by the definition's schema", async () => {
    const typed: Promise<unknown> = test.conveyor
      // @ts-expect-error `to` must be a string: the payload type comes from the zod schema
      .enqueue(sendEmail, { to: 42 });
    await expect(typed).rejects.toBeInstanceOf(ValidationError);
  });
});

describe("enqueue in the caller's transaction", () => {
  it("is visible after COMMIT and only then", async () => {
    const client = await connectTestClient();
    try {
      await client.query("BEGIN");
      const job = await test.conveyor.enqueue(item, { n: 10 }, { tx: client });
      expect(await test.conveyor.getJob(job.id)).toBeNull(); // other connections do not see it yet
      await client.query("COMMIT");
      expect(await test.conveyor.getJob(job.id)).toMatchObject({ id: job.id, status: "queued" });
    } finally {
      await client.end();
    }
  });

  it("is gone after ROLLBACK", async () => {
    const client = await connectTestClient();
    try {
      await client.query("BEGIN");
      const job = await test.conveyor.enqueue(item, { n: 11 }, { tx: client });
      const many = await test.conveyor.enqueueMany(
        [1, 2, 3].map((n) => ({ job: item, payload: { n } })),
        { tx: client },
      );
      await client.query("ROLLBACK");
      expect(await test.conveyor.getJob(job.id)).toBeNull();
      for (const rolledBack of many) expect(await test.conveyor.getJob(rolledBack.id)).toBeNull();
    } finally {
      await client.end();
    }
  });
});

describe("enqueueMany", () => {
  it("inserts 100,000 jobs in one call", async () => {
    const bulk = await createTestConveyor({ jobs: allTestJobs });
    try {
      const items = Array.from({ length: 100_000 }, (_, n) => ({ job: item, payload: { n } }));
      const jobs = await bulk.conveyor.enqueueMany(items);
      expect(jobs).toHaveLength(100_000);
      expect(jobs.every((job) => job.created)).toBe(true);
      // Results follow input order, across the chunks a call this large is inserted in.
      expect(jobs.every((job, n) => (job.payload as { n: number }).n === n)).toBe(true);
      expect(await countRows(bulk.conveyor, "jobs")).toBe(100_000);
      expect(await countRows(bulk.conveyor, "jobs", "(payload->>'n')::int = 54321")).toBe(1);
    } finally {
      await bulk.cleanup();
    }
  });

  it("inserts nothing when one item is invalid", async () => {
    const kind = "counters";
    const before = await countRows(test.conveyor, "jobs", "kind = $1", [kind]);
    const items: EnqueueManyItem[] = Array.from({ length: 1_000 }, (_, n) => ({
      job: counters,
      payload: { n },
    }));
    items[617] = { job: counters, payload: { n: "not a number" } };
    const error = await test.conveyor.enqueueMany(items).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).issues[0]!.path).toBe("jobs.617.payload.n");
    expect(await countRows(test.conveyor, "jobs", "kind = $1", [kind])).toBe(before);
  });
});

describe("enqueueMany larger than one insert statement", () => {
  const size = ENQUEUE_CHUNK_ROWS * 2 + 500; // three chunks

  it("inserts nothing when an item in a later chunk is invalid, and names it", async () => {
    const before = await countRows(test.conveyor, "jobs", "kind = 'counters'");
    const items: EnqueueManyItem[] = Array.from({ length: size }, (_, n) => ({ job: counters, payload: { n } }));
    const bad = ENQUEUE_CHUNK_ROWS * 2 + 17; // validated while the second chunk is being inserted
    items[bad] = { job: counters, payload: { n: "not a number" } };
    const error = await test.conveyor.enqueueMany(items).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).issues[0]!.path).toBe(`jobs.${bad}.payload.n`);
    expect(await countRows(test.conveyor, "jobs", "kind = 'counters'")).toBe(before);
  });

  it("inserts nothing when a later chunk's insert fails", async () => {
    // The database refuses the last row: its unique key is held, and it asks to be dropped.
    await test.conveyor.enqueue(counters, { held: 1 }, { unique: { key: "chunked-held", onConflict: "drop" } });
    const before = await countRows(test.conveyor, "jobs", "kind = 'counters'");
    const items = Array.from({ length: size }, (_, n) => ({
      job: counters,
      payload: { n },
      ...(n === size - 1 ? { unique: { key: "chunked-held", onConflict: "drop" as const } } : {}),
    }));
    await expect(test.conveyor.enqueueMany(items)).rejects.toBeInstanceOf(UniqueJobConflictError);
    expect(await countRows(test.conveyor, "jobs", "kind = 'counters'")).toBe(before);
  });

  it("runs in the caller's transaction: all gone after its ROLLBACK", async () => {
    const client = await connectTestClient();
    try {
      await client.query("BEGIN");
      const jobs = await test.conveyor.enqueueMany(
        Array.from({ length: size }, (_, n) => ({ job: item, payload: { n } })),
        { tx: client },
      );
      expect(jobs).toHaveLength(size);
      const { rows } = await client.query(`SELECT count(*)::int AS n FROM "${test.schema}".jobs WHERE id = ANY($1::uuid[])`, [jobs.map((j) => j.id)]);
      expect(rows[0].n).toBe(size); // all visible inside the transaction
      await client.query("ROLLBACK");
      expect(await countRows(test.conveyor, "jobs", "id = ANY($1::uuid[])", [jobs.map((j) => j.id)])).toBe(0);
    } finally {
      await client.end();
    }
  });
});

describe("getJob", () => {
  it("returns a new job with an empty execution list", async () => {
    const job = await test.conveyor.enqueue(item, { n: 20 });
    const found = await test.conveyor.getJob(job.id);
    expect(found).toMatchObject({ id: job.id, kind: "item", payload: { n: 20 }, status: "queued", executions: [] });
  });

  it("returns null for a missing id", async () => {
    expect(await test.conveyor.getJob(uuidv7())).toBeNull();
  });
});

describe("listJobs", () => {
  let list: TestConveyor;
  beforeAll(async () => {
    list = await createTestConveyor({ jobs: allTestJobs });
  });
  afterAll(async () => {
    await list.cleanup();
  });

  it("filters by status, kind, queue and tenant", async () => {
    const c = list.conveyor;
    const a = await c.enqueue(item, { n: 1 }, { queue: "q1", tenant: "t1" });
    const b = await c.enqueue(item, { n: 2 }, { queue: "q2", tenant: "t1" });
    const d = await c.enqueue(counters, { x: 1 }, { queue: "q1", tenant: "t2" });
    await c.cancel(b.id);
    const ids = async (filter: Parameters<typeof c.listJobs>[0]) => (await c.listJobs(filter)).items.map((job) => job.id);

    expect(await ids({})).toEqual([d.id, b.id, a.id]);
    expect(await ids({ status: "queued" })).toEqual([d.id, a.id]);
    expect(await ids({ status: "cancelled" })).toEqual([b.id]);
    expect(await ids({ kind: "item" })).toEqual([b.id, a.id]);
    expect(await ids({ kind: "counters" })).toEqual([d.id]);
    expect(await ids({ queue: "q1" })).toEqual([d.id, a.id]);
    expect(await ids({ tenant: "t1" })).toEqual([b.id, a.id]);
    expect(await ids({ tenant: "t2", kind: "item" })).toEqual([]);
    expect(await ids({ tenant: "t1", queue: "q1", status: "queued", kind: "item" })).toEqual([a.id]);
  });

  it("pages newest first with a cursor, without duplicates or gaps", async () => {
    const c = list.conveyor;
    const created = await c.enqueueMany(Array.from({ length: 23 }, (_, n) => ({ job: item, payload: { n }, queue: "paged" })));
    const seen: string[] = [];
    const pageSizes: number[] = [];
    let cursor: string | null = null;
    do {
      const page = await c.listJobs({ queue: "paged", limit: 5, cursor });
      pageSizes.push(page.items.length);
      seen.push(...page.items.map((job) => job.id));
      cursor = page.nextCursor;
    } while (cursor !== null);

    expect(pageSizes).toEqual([5, 5, 5, 5, 3]);
    expect(new Set(seen).size).toBe(23);
    // UUIDv7 ids are time-ordered: newest first is the reverse of creation order.
    expect(seen).toEqual(created.map((job) => job.id).reverse());
  });
});
