/**
 * A kind that keeps no succeeded jobs (`retention: { keepSucceeded: false }`):
 * its success deletes the job and what is recorded about it (earlier
 * attempts, steps, idempotency key) in the completion's statement, through
 * every completion path (the worker's batch of completions, ctx.transaction,
 * a batch handler); a job that others depend on, or that a waiter awaits,
 * is kept; failures and dead letters are kept as for any kind.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { ConfigError } from "../packages/core/src/core/errors.js";
import { defineJob, flowJob, type Worker } from "../packages/core/src/index.js";
import { createTestConveyor, type TestConveyor } from "./helpers/database.js";
import { waitFor } from "./helpers/wait-for.js";
import { silent, sql } from "./worker/support.js";

const payload = z.object({ n: z.number().int(), failFirst: z.boolean().optional(), failAlways: z.boolean().optional() });

const NOT_KEPT = { keepSucceeded: false } as const;

const plain = defineJob({
  kind: "not-kept.plain",
  schema: payload,
  maxAttempts: 2,
  backoff: { baseMs: 0, jitter: 0 },
  retention: NOT_KEPT,
  handler: async ({ payload: p, job, step }) => {
    await step("first", () => p.n);
    if (p.failAlways || (p.failFirst && job.attempt === 1)) throw new Error(`failing ${p.n}`);
    return { n: p.n };
  },
});

const inTransaction = defineJob({
  kind: "not-kept.transaction",
  schema: payload,
  retention: NOT_KEPT,
  handler: async ({ payload: p, transaction }) =>
    transaction(async (tx) => {
      await tx.query(`INSERT INTO ${schemaName()}.not_kept_effects (n) VALUES ($1)`, [p.n]);
      return { n: p.n };
    }),
});

const batched = defineJob({
  kind: "not-kept.batch",
  schema: payload,
  retention: NOT_KEPT,
  batch: { maxSize: 10, maxWaitMs: 20 },
  batchHandler: async ({ jobs }) => jobs.map((job) => ({ n: job.payload.n })),
});

const kept = defineJob({ kind: "not-kept.after", schema: payload, handler: async () => "after" });

let t: TestConveyor;
let worker: Worker;
const schemaName = () => `"${t.schema}"`;

beforeAll(async () => {
  t = await createTestConveyor({ jobs: [plain, inTransaction, batched, kept], logger: silent });
  await sql(t.conveyor, "CREATE TABLE {{schema}}.not_kept_effects (n integer NOT NULL)");
  worker = t.conveyor.worker({ concurrency: 10, pollIntervalMs: 50 });
  await worker.start();
});
afterAll(async () => {
  await worker?.stop();
  await t?.cleanup();
});

const rowsOf = async (table: string, ids: readonly string[]) =>
  Number((await sql(t.conveyor, `SELECT count(*) FROM {{schema}}.${table} WHERE ${table === "jobs" ? "id" : "job_id"} = ANY($1::uuid[])`, [ids])).rows[0].count);

/** Waits until none of `ids` is live: each was deleted or reached an end. */
const settled = (ids: readonly string[]) =>
  waitFor("the jobs to end", async () => Number((await sql(t.conveyor, "SELECT count(*) FROM {{schema}}.jobs_live WHERE id = ANY($1::uuid[])", [ids])).rows[0].count) === 0);

describe("a kind that keeps no succeeded jobs", () => {
  it("deletes each succeeded job with its attempts, steps and idempotency key, and frees the key", async () => {
    const keyed = await t.conveyor.enqueue(plain, { n: 1 }, { idempotencyKey: "not-kept-1" });
    const retried = await t.conveyor.enqueue(plain, { n: 2, failFirst: true });
    const ids = [keyed.id, retried.id];
    await settled(ids);
    for (const table of ["jobs", "job_executions", "job_steps", "job_keys", "job_attempts"]) expect(await rowsOf(table, ids), table).toBe(0);
    expect(await t.conveyor.getJob(keyed.id)).toBeNull();
    // The key answered with its job while it could be read; it is free now: the same enqueue makes a new job.
    const again = await t.conveyor.enqueue(plain, { n: 1 }, { idempotencyKey: "not-kept-1" });
    expect(again.id).not.toBe(keyed.id);
    await settled([again.id]);
  });

  it("deletes through ctx.transaction and through a batch handler too, with the transaction's effects committed", async () => {
    const one = await t.conveyor.enqueue(inTransaction, { n: 10 });
    const many = await t.conveyor.enqueueMany([20, 21, 22].map((n) => ({ job: batched, payload: { n } })));
    const ids = [one.id, ...many.map((job) => job.id)];
    await settled(ids);
    expect(await rowsOf("jobs", ids)).toBe(0);
    expect(await rowsOf("job_batch_members", ids)).toBe(0);
    expect((await sql(t.conveyor, "SELECT n FROM {{schema}}.not_kept_effects")).rows).toEqual([{ n: 10 }]);
  });

  it("keeps a job that others depend on, and its dependent runs", async () => {
    const flow = await t.conveyor.flows.enqueue({
      jobs: { first: flowJob(plain, { n: 30 }), then: flowJob(kept, { n: 31 }, { dependsOn: ["first"] }) },
    });
    await waitFor("the dependent to succeed", async () => (await t.conveyor.getJob(flow.jobs.then!.id))?.status === "succeeded");
    expect(await t.conveyor.getJob(flow.jobs.first!.id)).toMatchObject({ status: "succeeded", result: { n: 30 } });
  });

  it("keeps a job a waiter awaits, and waitFor returns its result", async () => {
    // No worker while the wait is recorded: the job ends only after it.
    await worker.stop();
    const { id } = await t.conveyor.enqueue(plain, { n: 40 });
    const ended = t.conveyor.waitFor(id, { timeoutMs: 30_000 });
    await waitFor("the wait to be recorded", async () => Number((await sql(t.conveyor, "SELECT count(*) FROM {{schema}}.job_waits WHERE job_id = $1", [id])).rows[0].count) === 1);
    worker = t.conveyor.worker({ concurrency: 10, pollIntervalMs: 50 });
    await worker.start();
    expect(await ended).toMatchObject({ id, status: "succeeded", result: { n: 40 } });
  });

  it("keeps failures: a job that dies is a dead letter with its attempts", async () => {
    const { id } = await t.conveyor.enqueue(plain, { n: 50, failAlways: true });
    await settled([id]);
    expect(await t.conveyor.getJob(id)).toMatchObject({ status: "dead", attempts: 2 });
    expect(await rowsOf("job_executions", [id])).toBe(2);
  });

  it("refuses a keepSucceeded that is not a boolean", () => {
    expect(() => defineJob({ kind: "x", schema: payload, retention: { keepSucceeded: "no" as never }, handler: () => {} })).toThrow(ConfigError);
    expect(() => defineJob({ kind: "x", schema: payload, retention: { keepSucceeded: "no" as never }, handler: () => {} })).toThrow(/retention\.keepSucceeded must be a boolean/);
  });
});
