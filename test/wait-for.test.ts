/**
 * `waitFor`: returns a job once it has ended, however it ended (a worker's
 * success, a cancel); its wake-up is a NOTIFY sent at the commit of the end
 * of a job someone waits for, and never for an end that rolls back or a
 * job nobody waits for; typed errors for a timeout, an abort, an unknown
 * job and bad input, none of which changes the job.
 */
import { randomUUID } from "node:crypto";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { NotFoundError, ValidationError, WaitAbortedError, WaitTimeoutError } from "../packages/core/src/core/errors.js";
import { uuidv7 } from "../packages/core/src/core/ids.js";
import { defineJob } from "../packages/core/src/index.js";
import { connectTestClient, createTestConveyor, storeOf, type TestConveyor } from "./helpers/database.js";
import { item } from "./helpers/jobs.js";
import { waitFor as eventually } from "./helpers/wait-for.js";
import { silent, sql } from "./worker/support.js";

const releases = new Map<number, () => void>();
const gated = defineJob({
  kind: "gated",
  schema: z.object({ n: z.number().int() }),
  handler: async ({ payload }) => {
    await new Promise<void>((resolve) => releases.set(payload.n, resolve));
    return { n: payload.n };
  },
});

let t: TestConveyor;
let listener: pg.Client;
const notifications: string[] = [];

beforeAll(async () => {
  t = await createTestConveyor({ jobs: [gated, item], logger: silent });
  listener = await connectTestClient();
  listener.on("notification", (message) => {
    if (message.channel === `${t.schema}:ended`) notifications.push(message.payload ?? "");
  });
  await listener.query(`LISTEN "${t.schema}:ended"`);
});
afterAll(async () => {
  await listener?.end();
  await t?.cleanup();
});

const waits = async (id: string) => Number((await sql(t.conveyor, "SELECT count(*) FROM {{schema}}.job_waits WHERE job_id = $1", [id])).rows[0].count);

describe("waitFor", () => {
  it("returns the job a worker ended, with its result and attempts", async () => {
    const worker = t.conveyor.worker({ concurrency: 2, pollIntervalMs: 60_000 });
    await worker.start();
    try {
      const { id } = await t.conveyor.enqueue(gated, { n: 1 });
      const ended = t.conveyor.waitFor(id, { timeoutMs: 30_000 });
      await eventually("the handler runs", () => releases.has(1));
      await eventually("the wait is recorded", async () => (await waits(id)) === 1);
      releases.get(1)!();
      const job = await ended;
      expect(job).toMatchObject({ id, status: "succeeded", result: { n: 1 } });
      expect(job.executions.map((execution) => execution.outcome)).toEqual(["succeeded"]);
      expect(notifications).toContain(id);
      expect(await waits(id), "the wait is forgotten").toBe(0);
    } finally {
      await worker.stop();
    }
  });

  it("returns a job that has already ended at once, and one cancelled while waited for", async () => {
    const done = await t.conveyor.enqueue(item, { n: 1 });
    await t.conveyor.cancel(done.id);
    expect(await t.conveyor.waitFor(done.id)).toMatchObject({ id: done.id, status: "cancelled" });

    const { id } = await t.conveyor.enqueue(item, { n: 2 });
    const ended = t.conveyor.waitFor(id);
    await eventually("the wait is recorded", async () => (await waits(id)) === 1);
    await t.conveyor.cancel(id);
    expect(await ended).toMatchObject({ id, status: "cancelled" });
  });

  it("is notified at the commit of an end, never for a rollback or a job nobody waits for", async () => {
    const watched = await t.conveyor.enqueue(item, { n: 3 });
    const unwatched = await t.conveyor.enqueue(item, { n: 4 });
    // The statement a wait starts with: its row in job_waits, and the job marked awaited.
    await storeOf(t.conveyor).jobWaitAdd(watched.id, randomUUID(), 60_000);
    const awaited = async (id: string) => (await sql(t.conveyor, "SELECT awaited FROM {{schema}}.jobs WHERE id = $1", [id])).rows[0].awaited;
    expect([await awaited(watched.id), await awaited(unwatched.id)]).toEqual([true, false]);
    const writer = await connectTestClient();
    try {
      const end = `UPDATE "${t.schema}".jobs SET status = 'cancelled', finished_at = now() WHERE id = ANY($1::uuid[])`;
      await writer.query("BEGIN");
      await writer.query(end, [[watched.id, unwatched.id]]);
      await writer.query("ROLLBACK");
      await writer.query("BEGIN");
      await writer.query(end, [[watched.id, unwatched.id]]);
      // A round trip on the listening connection delivers anything already sent to it.
      await listener.query("SELECT 1");
      expect(notifications).not.toContain(watched.id);
      await writer.query("COMMIT");
      await eventually("the end's notification", async () => {
        await listener.query("SELECT 1");
        return notifications.includes(watched.id);
      });
      expect(notifications.filter((id) => id === watched.id)).toHaveLength(1);
      expect(notifications).not.toContain(unwatched.id);
    } finally {
      await writer.end();
    }
  });

  it("falls back to reading the job when the client cannot LISTEN (a transaction pooler)", async () => {
    const pooled = await createTestConveyor({ jobs: [gated, item], logger: silent, schema: t.schema, pooler: "transaction" });
    try {
      const { id } = await pooled.conveyor.enqueue(item, { n: 8 });
      const ended = pooled.conveyor.waitFor(id, { timeoutMs: 10_000 });
      await eventually("the wait is recorded", async () => (await waits(id)) === 1);
      await t.conveyor.cancel(id);
      expect(await ended).toMatchObject({ id, status: "cancelled" });
    } finally {
      await pooled.cleanup();
    }
  });

  it("throws WaitTimeoutError when the job has not ended in time, and leaves it as it is", async () => {
    const { id } = await t.conveyor.enqueue(item, { n: 5 });
    const error = await t.conveyor.waitFor(id, { timeoutMs: 50 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WaitTimeoutError);
    expect(error).toMatchObject({ code: "WAIT_TIMEOUT", jobId: id, timeoutMs: 50 });
    expect(await t.conveyor.getJob(id)).toMatchObject({ status: "queued" });
    expect(await waits(id)).toBe(0);
  });

  it("throws WaitAbortedError when its signal aborts, before or during the wait", async () => {
    const { id } = await t.conveyor.enqueue(item, { n: 6 });
    const controller = new AbortController();
    const waiting = t.conveyor.waitFor(id, { signal: controller.signal }).catch((e: unknown) => e);
    await eventually("the wait is recorded", async () => (await waits(id)) === 1);
    controller.abort(new Error("user left"));
    const error = await waiting;
    expect(error).toBeInstanceOf(WaitAbortedError);
    expect(error).toMatchObject({ code: "WAIT_ABORTED", jobId: id });
    expect((error as Error).cause).toEqual(new Error("user left"));
    await expect(t.conveyor.waitFor(id, { signal: AbortSignal.abort() })).rejects.toBeInstanceOf(WaitAbortedError);
    expect(await t.conveyor.getJob(id)).toMatchObject({ status: "queued" });
    expect(await waits(id)).toBe(0);
  });

  it("throws NotFoundError for an unknown job or another tenant's, and ValidationError for bad input", async () => {
    await expect(t.conveyor.waitFor(uuidv7())).rejects.toBeInstanceOf(NotFoundError);
    const { id } = await t.conveyor.enqueue(item, { n: 7 }, { tenant: "owner" });
    await expect(t.conveyor.waitFor(id, { tenant: "someone-else" })).rejects.toBeInstanceOf(NotFoundError);
    await expect(t.conveyor.waitFor("not-a-uuid")).rejects.toBeInstanceOf(ValidationError);
    for (const timeoutMs of [0, -1, 1.5, Number.NaN, 2 ** 31]) {
      await expect(t.conveyor.waitFor(id, { timeoutMs }), String(timeoutMs)).rejects.toBeInstanceOf(ValidationError);
    }
    expect(await waits(id)).toBe(0);
  });
});
