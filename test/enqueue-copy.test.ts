import type pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { COPY_MIN_ROWS, ENQUEUE_CHUNK_ROWS } from "../packages/core/src/core/defaults.js";
import { ValidationError } from "../packages/core/src/core/errors.js";
import type { EnqueueManyItem } from "../packages/core/src/client/job-enqueuer.js";
import { connectTestClient, countRows, createTestConveyor, storeOf, type TestConveyor } from "./helpers/database.js";
import { allTestJobs, anyValue, item } from "./helpers/jobs.js";

// enqueueMany of COPY_MIN_ROWS jobs or more, without keys and outside a
// caller's transaction, is written by COPY (JobStore.jobCopyMany).

let test: TestConveyor;
let listener: pg.Client;
let heard: string[] = [];
beforeAll(async () => {
  test = await createTestConveyor({ jobs: allTestJobs });
  listener = await connectTestClient();
  listener.on("notification", (message) => heard.push(message.payload ?? ""));
  await listener.query(`LISTEN "${test.schema}:jobs"`);
});
afterEach(() => {
  vi.restoreAllMocks();
  heard = [];
});
afterAll(async () => {
  await listener?.end();
  await test.cleanup();
});

const copies = () => vi.spyOn(storeOf(test.conveyor), "jobCopyMany");
const items = (count: number, queue = "bulk") => Array.from({ length: count }, (_, n) => ({ job: item, payload: { n }, queue }));

/** No client of the pool is checked out, and one more statement runs: nothing was left mid-transaction. */
async function poolSettled(): Promise<void> {
  expect(test.conveyor.pool.idleCount).toBe(test.conveyor.pool.totalCount);
  expect((await test.conveyor.pool.query("SELECT 1 AS one")).rows[0].one).toBe(1);
}

describe("enqueueMany by COPY", () => {
  it("stores every job exactly as returned, whatever its options and its payload's characters", async () => {
    const spy = copies();
    const runAt = new Date(Date.now() + 3_600_000);
    const awkward = ["tab\there", "line\nbreak", "carriage\rreturn", "back\\slash", "\\N", "ünïcødé ✓", 'quote "x"', ""];
    const batch = Array.from({ length: COPY_MIN_ROWS }, (_, n) => ({
      job: anyValue,
      payload: { value: { n, text: awkward[n % awkward.length] } },
      ...(n % 5 === 1 ? { delayMs: 1_234.5678 } : {}),
      ...(n % 5 === 2 ? { runAt } : {}),
      ...(n % 5 === 3 ? { priority: -7, queue: "other", tenant: "acme", maxAttempts: 2 } : {}),
    }));
    const jobs = await test.conveyor.enqueueMany(batch);
    expect(spy).toHaveBeenCalledTimes(1);
    expect(jobs).toHaveLength(COPY_MIN_ROWS);
    for (const [n, job] of jobs.entries()) {
      expect(job.created).toBe(true);
      expect(job.payload).toEqual(batch[n]!.payload);
      const { executions, requeues, ...stored } = (await test.conveyor.getJob(job.id))!;
      expect(requeues).toEqual([]);
      const { created, ...returned } = job;
      expect(returned).toStrictEqual(stored);
    }
    expect(jobs[3]).toMatchObject({ priority: -7, queue: "other", tenant: "acme", maxAttempts: 2 });
    expect(jobs[2]!.runAt.getTime()).toBe(runAt.getTime());
  });

  it("delays a job by the database clock to the microsecond, as a single enqueue does", async () => {
    const delayMs = 1_234.5678;
    const [copied] = await test.conveyor.enqueueMany(items(COPY_MIN_ROWS).map((entry) => ({ ...entry, delayMs })));
    const single = await test.conveyor.enqueue(item, { n: 0 }, { delayMs });
    const { rows } = await test.conveyor.pool.query(
      `SELECT id, (extract(epoch FROM run_at - created_at) * 1000000)::bigint::text AS offset_us
         FROM "${test.schema}".jobs WHERE id = ANY($1::uuid[])`,
      [[copied!.id, single.id]],
    );
    expect(rows.map((row) => row.offset_us)).toEqual(["1234568", "1234568"]);
  });

  it("inserts instead below COPY_MIN_ROWS, with a key, or in the caller's transaction", async () => {
    const spy = copies();
    await test.conveyor.enqueueMany(items(COPY_MIN_ROWS - 1));
    const keyed = items(COPY_MIN_ROWS).map((entry, n) => (n === 7 ? { ...entry, idempotencyKey: "copy-keyed" } : entry));
    await test.conveyor.enqueueMany(keyed);
    const client = await connectTestClient();
    try {
      await client.query("BEGIN");
      await test.conveyor.enqueueMany(items(COPY_MIN_ROWS), { tx: client });
      await client.query("ROLLBACK");
    } finally {
      await client.end();
    }
    expect(spy).not.toHaveBeenCalled();
  });

  it("writes nothing when an item of a later COPY statement is invalid, names it, and leaves the pool usable", async () => {
    const before = await countRows(test.conveyor, "jobs");
    const batch: EnqueueManyItem[] = items(ENQUEUE_CHUNK_ROWS * 2);
    const bad = ENQUEUE_CHUNK_ROWS + 1_234; // validated while the first statement's rows are in the database
    batch[bad] = { job: item, payload: { n: "not a number" } };
    const error = await test.conveyor.enqueueMany(batch).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).issues[0]!.path).toBe(`jobs.${bad}.payload.n`);
    expect(await countRows(test.conveyor, "jobs")).toBe(before);
    await poolSettled();
  });

  it("writes nothing when the database refuses a row of a later COPY statement, and leaves the pool usable", async () => {
    const jobs = `"${test.schema}".jobs`;
    // A rule only the database knows, as a check constraint added by an operator would be.
    await test.conveyor.pool.query(`ALTER TABLE ${jobs} ADD CONSTRAINT refuse_marked CHECK (payload->>'value' IS DISTINCT FROM 'refused')`);
    try {
      const before = await countRows(test.conveyor, "jobs");
      const batch: EnqueueManyItem[] = items(ENQUEUE_CHUNK_ROWS * 2);
      batch[ENQUEUE_CHUNK_ROWS + 17] = { job: anyValue, payload: { value: "refused" } };
      const error = await test.conveyor.enqueueMany(batch).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as Error).message).toBe("violates refuse_marked");
      expect(await countRows(test.conveyor, "jobs")).toBe(before);
      await poolSettled();
    } finally {
      await test.conveyor.pool.query(`ALTER TABLE ${jobs} DROP CONSTRAINT refuse_marked`);
    }
    expect(await test.conveyor.enqueueMany(items(COPY_MIN_ROWS))).toHaveLength(COPY_MIN_ROWS);
  });

  it("wakes the queues of the jobs it wrote, alone or beside another enqueue", async () => {
    await test.conveyor.enqueueMany(items(COPY_MIN_ROWS, "copy-alone"));
    await Promise.all([
      test.conveyor.enqueueMany(items(COPY_MIN_ROWS, "copy-first")),
      test.conveyor.enqueueMany(items(COPY_MIN_ROWS, "copy-second")),
    ]);
    // Only these queues: an earlier test's wake-up may still be arriving.
    const woken = () => new Set(heard.filter((queue) => queue.startsWith("copy-")));
    const deadline = Date.now() + 5_000;
    while (woken().size < 3 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(woken()).toEqual(new Set(["copy-alone", "copy-first", "copy-second"]));
  });
});
