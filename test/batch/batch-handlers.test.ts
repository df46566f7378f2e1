/**
 * Batch handlers through a real worker: batches fill to maxSize or leave
 * after maxWaitMs, form per key when asked, and settle each job on its own
 * (result, retryable error, retryAfter, permanent error), each behind its
 * own fence with its own attempts; throwing fails every job; a cancelled
 * job is settled alone; the batch's transaction commits its writes with
 * every success, or nothing when a job of it is no longer the worker's;
 * queue caps count each job of a batch; each attempt records its batch.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { createWorkerMetrics, defineJob, PermanentError, retryAfter } from "../../packages/core/src/index.js";
import type { Worker } from "../../packages/core/src/worker/worker.js";
import { createTestConveyor, type TestConveyor } from "../helpers/database.js";
import { waitFor } from "../helpers/wait-for.js";
import { silent, sql } from "../worker/support.js";

/** Every batch a handler ran: its job ids, in order. */
const batches: string[][] = [];
const email = z.object({ to: z.string(), customer: z.string().default("c"), fail: z.enum(["no", "retry", "permanent", "later"]).default("no") });
const failedOnce = new Set<string>();

const send = defineJob({
  kind: "batch.email",
  schema: email,
  maxAttempts: 3,
  backoff: { baseMs: 10, capMs: 10, jitter: 0 },
  batch: { maxSize: 5, maxWaitMs: 200 },
  async batchHandler({ jobs }) {
    batches.push(jobs.map((job) => job.id));
    return jobs.map((job) => {
      const { fail, to } = job.payload;
      if (fail === "permanent") return new PermanentError(`no such address ${to}`);
      if (fail === "later" && !failedOnce.has(job.id)) return failedOnce.add(job.id), retryAfter(10);
      if (fail === "retry" && !failedOnce.has(job.id)) return failedOnce.add(job.id), new Error("bounced");
      return { sent: to, attempt: job.attempt };
    });
  },
});

const perCustomer = defineJob({
  kind: "batch.per-customer",
  schema: email,
  batch: { maxSize: 10, maxWaitMs: 100, key: (payload) => payload.customer },
  async batchHandler({ jobs }) {
    batches.push(jobs.map((job) => job.payload.customer));
    return jobs.map(() => null);
  },
});

const throwing = defineJob({
  kind: "batch.throwing",
  schema: z.object({}),
  maxAttempts: 1,
  batch: { maxSize: 3, maxWaitMs: 100 },
  batchHandler: () => {
    throw new Error("the provider is down");
  },
});

/** Waits for its release, so a test can act on a batch while it runs. */
let release: (() => void) | null = null;
let gatedSignals: AbortSignal[] = [];
/** The running batch's own signal, read by the test rather than the handler: it is made when first read. */
let gatedBatchSignal: (() => AbortSignal) | null = null;
const gated = defineJob({
  kind: "batch.gated",
  schema: z.object({ n: z.number() }),
  batch: { maxSize: 3, maxWaitMs: 100 },
  async batchHandler(context) {
    const { jobs } = context;
    gatedBatchSignal = () => context.signal;
    gatedSignals = jobs.map((job) => job.signal);
    await new Promise<void>((resolve) => (release = resolve));
    return jobs.map((job) => (job.signal.aborted ? new Error("cancelled") : job.payload.n));
  },
});

let steal = true;
const transactional = defineJob({
  kind: "batch.transactional",
  schema: z.object({ table: z.string() }),
  backoff: { baseMs: 10, capMs: 10, jitter: 0 },
  batch: { maxSize: 4, maxWaitMs: 200 },
  async batchHandler({ jobs, transaction }) {
    return transaction(async (tx) => {
      for (const job of jobs) await tx.query(`INSERT INTO ${job.payload.table} (job_id) VALUES ($1)`, [job.id]);
      if (steal) {
        steal = false;
        // Another worker's reclaim of the first job while the transaction runs: its completion must be fenced.
        await t.conveyor.pool.query(
          `UPDATE "${t.schema}".jobs SET status = 'retrying', locked_by = NULL, current_execution_id = NULL, lease_expires_at = NULL WHERE id = $1`,
          [jobs[0]!.id],
        );
      }
      return jobs.map((job) => ({ stored: job.id }));
    });
  },
});

let running = 0;
let most = 0;
const capped = defineJob({
  kind: "batch.capped",
  schema: z.object({}),
  queue: "batch-capped",
  batch: { maxSize: 10, maxWaitMs: 50 },
  async batchHandler({ jobs }) {
    batches.push(jobs.map((job) => job.id));
    running += jobs.length;
    most = Math.max(most, running);
    await new Promise((resolve) => setTimeout(resolve, 30));
    running -= jobs.length;
    return jobs.map(() => "ok");
  },
});

let t: TestConveyor;
let worker: Worker;
const table = `batch_effects_${process.pid}`;

beforeAll(async () => {
  t = await createTestConveyor({ jobs: [send, perCustomer, throwing, gated, transactional, capped], logger: silent });
  await sql(t.conveyor, `CREATE TABLE IF NOT EXISTS {{schema}}.${table} (job_id uuid NOT NULL)`);
});
afterAll(async () => {
  await worker?.stop();
  await t?.cleanup();
});
beforeEach(() => {
  batches.length = 0;
});

async function runWorker(kinds: string[], concurrency = 20): Promise<void> {
  await worker?.stop();
  worker = t.conveyor.worker({ concurrency, pollIntervalMs: 20, kinds, metrics: await createWorkerMetrics() });
}
const ended = (id: string) => t.conveyor.waitFor(id, { timeoutMs: 20_000 });

describe("batch handlers", () => {
  it("fills batches to maxSize and settles each job by its own outcome", async () => {
    const jobs = await t.conveyor.enqueueMany([
      ...Array.from({ length: 7 }, (_, i) => ({ job: send, payload: { to: `ok${i}@x` } })),
      { job: send, payload: { to: "retry@x", fail: "retry" as const } },
      { job: send, payload: { to: "later@x", fail: "later" as const } },
      { job: send, payload: { to: "gone@x", fail: "permanent" as const } },
    ]);
    await runWorker(["batch.email"]);
    await worker.start();
    const done = await Promise.all(jobs.map((job) => ended(job.id)));
    // Full batches leave at once; none exceeds maxSize. (A waitFor marks its job while a claim runs,
    // which SKIP LOCKED passes over until the next claim: not every job lands in the first claim.)
    const sizes = batches.map((batch) => batch.length);
    expect(Math.max(...sizes), JSON.stringify(sizes)).toBe(5);
    const byTo = new Map(done.map((job) => [(job.payload as { to: string }).to, job]));
    expect(byTo.get("ok0@x")).toMatchObject({ status: "succeeded", result: { sent: "ok0@x", attempt: 1 }, attempts: 1 });
    expect(byTo.get("retry@x")).toMatchObject({ status: "succeeded", result: { sent: "retry@x", attempt: 2 }, attempts: 2 });
    expect(byTo.get("retry@x")!.executions.map((e) => e.outcome)).toEqual(["failed", "succeeded"]);
    expect(byTo.get("later@x")).toMatchObject({ status: "succeeded", attempts: 1 });
    expect(byTo.get("later@x")!.executions.map((e) => e.outcome)).toEqual(["retry_after", "succeeded"]);
    expect(byTo.get("gone@x")).toMatchObject({ status: "dead", attempts: 1 });
    expect(byTo.get("gone@x")!.lastError).toMatchObject({ name: "PermanentError", message: "no such address gone@x" });
    // Each attempt records the batch it ran in.
    const first = byTo.get("ok0@x")!.executions[0]!;
    await waitFor("the batch's members to be recorded", async () => (await t.conveyor.getJob(first.jobId))!.executions[0]!.batch !== null, 5_000);
    const execution = (await t.conveyor.getJob(first.jobId))!.executions[0]!;
    // The size of the batch the handler got this job in (a job a later claim found runs in a smaller one).
    const ranIn = batches.find((batch) => batch.includes(first.jobId))!;
    expect(execution.batch).toMatchObject({ size: ranIn.length });
    const metrics = await worker.metrics!.registry.metrics();
    expect(metrics).toMatch(/conveyor_batch_size_count\{kind="batch.email"\} [1-9]/);
  });

  it("leaves after maxWaitMs with fewer jobs, and forms batches per key", async () => {
    await runWorker(["batch.per-customer"]);
    await worker.start();
    const jobs = await t.conveyor.enqueueMany(
      ["a", "b", "a", "b", "a"].map((customer, i) => ({ job: perCustomer, payload: { to: `${i}@x`, customer } })),
    );
    await Promise.all(jobs.map((job) => ended(job.id)));
    expect(batches.length).toBeGreaterThanOrEqual(2);
    for (const batch of batches) expect(new Set(batch).size).toBe(1); // one customer per batch
    expect(batches.flat().sort()).toEqual(["a", "a", "a", "b", "b"]);
  });

  it("fails every job of a batch whose handler throws", async () => {
    await runWorker(["batch.throwing"]);
    await worker.start();
    const jobs = await t.conveyor.enqueueMany([1, 2, 3].map(() => ({ job: throwing, payload: {} })));
    for (const job of await Promise.all(jobs.map((j) => ended(j.id)))) {
      expect(job).toMatchObject({ status: "dead", lastError: { message: "the provider is down" } });
    }
  });

  it("settles a job cancelled mid-batch on its own: its signal aborts, the others succeed", async () => {
    await runWorker(["batch.gated"]);
    await worker.start();
    const jobs = await t.conveyor.enqueueMany([1, 2, 3].map((n) => ({ job: gated, payload: { n } })));
    await waitFor("the batch to start", async () => release !== null, 10_000);
    await t.conveyor.cancel(jobs[1]!.id);
    await waitFor("the cancel to abort that job's signal", async () => gatedSignals[1]?.aborted === true, 5_000);
    expect(gatedSignals.map((signal) => signal.aborted)).toEqual([false, true, false]);
    expect(gatedBatchSignal!().aborted).toBe(false); // the other jobs go on
    release!();
    const [a, b, c] = await Promise.all(jobs.map((job) => ended(job.id)));
    expect([a!.status, b!.status, c!.status]).toEqual(["succeeded", "cancelled", "succeeded"]);
    expect([a!.result, c!.result]).toEqual([1, 3]);
  });

  it("aborts the batch's signal once every job of it has aborted, first read after they did", async () => {
    release = null;
    await runWorker(["batch.gated"]);
    await worker.start();
    const jobs = await t.conveyor.enqueueMany([1, 2].map((n) => ({ job: gated, payload: { n } })));
    await waitFor("the batch to start", async () => release !== null, 10_000);
    await Promise.all(jobs.map((job) => t.conveyor.cancel(job.id)));
    await waitFor("the cancels to abort both jobs' signals", async () => gatedSignals.length === 2 && gatedSignals.every((signal) => signal.aborted), 5_000);
    expect(gatedBatchSignal!().aborted).toBe(true);
    release!();
    const done = await Promise.all(jobs.map((job) => ended(job.id)));
    expect(done.map((job) => job!.status)).toEqual(["cancelled", "cancelled"]);
  });

  it("commits the batch's writes with every success, or none when a job is no longer the worker's", async () => {
    // Enqueued, and waited for, before the worker starts: a waitFor marks its job (jobs.awaited), which a
    // claim running at that moment passes over; marked first, the first claim takes all four into one batch.
    const jobs = await t.conveyor.enqueueMany([1, 2, 3, 4].map(() => ({ job: transactional, payload: { table: `"${t.schema}".${table}` } })));
    const ending = Promise.all(jobs.map((job) => ended(job.id)));
    const ids = jobs.map((job) => job.id);
    await waitFor("the waits to mark their jobs", async () => (await sql(t.conveyor, "SELECT count(*)::int AS n FROM {{schema}}.jobs WHERE id = ANY($1) AND awaited", [ids])).rows[0].n === 4, 5_000);
    await runWorker(["batch.transactional"]);
    await worker.start();
    const done = await ending;
    for (const job of done) expect(job).toMatchObject({ status: "succeeded", result: { stored: job.id } });
    // The first transaction rolled back whole (one job was stolen); the retries wrote each job once.
    const { rows } = await sql(t.conveyor, `SELECT job_id, count(*)::int AS n FROM {{schema}}.${table} GROUP BY job_id`);
    expect(rows.map((row: { n: number }) => row.n)).toEqual([1, 1, 1, 1]);
    expect(rows.map((row: { job_id: string }) => row.job_id).sort()).toEqual(jobs.map((job) => job.id).sort());
    const firstRound = done.filter((job) => job.id !== jobs[0]!.id).map((job) => job.executions[0]!.outcome);
    expect(firstRound).toEqual(["failed", "failed", "failed"]);
  });

  it("counts each job of a batch against a queue's concurrency cap", async () => {
    await t.conveyor.queues.setLimits("batch-capped", { concurrency: 3 });
    await runWorker(["batch.capped"]);
    await worker.start();
    const jobs = await t.conveyor.enqueueMany(Array.from({ length: 12 }, () => ({ job: capped, payload: {} })));
    await Promise.all(jobs.map((job) => ended(job.id)));
    expect(most).toBeLessThanOrEqual(3);
    for (const batch of batches) expect(batch.length).toBeLessThanOrEqual(3);
  });
});
