import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Conveyor, createWorkerMetrics, defineJob } from "../../packages/core/src/index.js";
import { createTestConveyor } from "../helpers/database.js";
import { drained, emptyPayload, silent, sql } from "./support.js";
import { z } from "zod";
import { waitFor } from "../helpers/wait-for.js";

const CONCURRENCY = 3;
let inFlight = new Map<string, number>();
const maxInFlight = new Map<string, number>();
const ledger: Array<{ jobId: string; executionId: string; workerId: string }> = [];

const work = defineJob({
  kind: "work",
  schema: z.object({ n: z.number().int() }),
  async handler({ payload, job }) {
    const now = (inFlight.get(job.workerId) ?? 0) + 1;
    inFlight.set(job.workerId, now);
    maxInFlight.set(job.workerId, Math.max(maxInFlight.get(job.workerId) ?? 0, now));
    await new Promise((resolve) => setTimeout(resolve, 1 + (payload.n % 7)));
    ledger.push({ jobId: job.id, executionId: job.executionId, workerId: job.workerId });
    inFlight.set(job.workerId, (inFlight.get(job.workerId) ?? 1) - 1);
    return { n: payload.n };
  },
});

let releaseHeld: () => void = () => {};
let held = new Promise<void>((resolve) => (releaseHeld = resolve));
const hold = defineJob({ kind: "hold", schema: emptyPayload, handler: () => held });

describe("processing with many workers in one process", () => {
  let conveyor: Conveyor;
  let cleanup: () => Promise<void>;
  beforeAll(async () => {
    ({ conveyor, cleanup } = await createTestConveyor({ jobs: [work, hold, defineJob({ kind: "noop", schema: emptyPayload, handler: () => {} })], logger: silent }));
  });
  afterAll(() => cleanup());

  it("runs 200 jobs on 8 workers exactly once each, never above each worker's concurrency", async () => {
    inFlight = new Map();
    const enqueued = await conveyor.enqueueMany(Array.from({ length: 200 }, (_, n) => ({ job: work, payload: { n } })));
    const workers = Array.from({ length: 8 }, () => conveyor.worker({ concurrency: CONCURRENCY, pollIntervalMs: 50, logger: silent }));
    // Sample the database while they run: no worker ever holds more running jobs than its concurrency.
    let maxHeldInDb = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const { rows } = await sql(conveyor, `SELECT max(n)::int AS m FROM (SELECT count(*) AS n FROM {{schema}}.jobs WHERE status = 'running' GROUP BY locked_by) s`);
        maxHeldInDb = Math.max(maxHeldInDb, rows[0].m ?? 0);
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    })();
    await Promise.all(workers.map((worker) => worker.start()));
    await waitFor("all jobs to finish", () => drained(conveyor), 60_000);
    sampling = false;
    await sampler;
    await Promise.all(workers.map((worker) => worker.stop()));

    const { rows: jobs } = await sql(conveyor, `SELECT status, attempts, result FROM {{schema}}.jobs WHERE kind = 'work'`);
    expect(jobs).toHaveLength(200);
    expect(jobs.every((job: { status: string; attempts: number }) => job.status === "succeeded" && job.attempts === 1)).toBe(true);

    // The side-effect ledger: one entry per job, and it is the succeeded execution.
    expect(ledger).toHaveLength(200);
    expect(new Set(ledger.map((entry) => entry.jobId)).size).toBe(200);
    const { rows: succeeded } = await sql(conveyor, `SELECT id, job_id FROM {{schema}}.job_attempts WHERE outcome = 'succeeded'`);
    expect(succeeded).toHaveLength(200);
    const succeededIds = new Set(succeeded.map((row: { id: string }) => row.id));
    expect(ledger.every((entry) => succeededIds.has(entry.executionId))).toBe(true);
    expect(new Set(enqueued.map((job) => job.id))).toEqual(new Set(ledger.map((entry) => entry.jobId)));

    expect(new Set(ledger.map((entry) => entry.workerId)).size).toBeGreaterThan(1);
    expect(Math.max(...maxInFlight.values())).toBeLessThanOrEqual(CONCURRENCY);
    expect(maxHeldInDb).toBeLessThanOrEqual(CONCURRENCY);
    expect(maxHeldInDb).toBeGreaterThan(0);
  });

  it("records each claim in job_executions and registers the worker while it runs", async () => {
    const worker = conveyor.worker({ concurrency: 1, pollIntervalMs: 50, logger: silent });
    await worker.start();
    const listed = await conveyor.listWorkers();
    expect(listed.map((w) => w.id)).toContain(worker.id);
    const job = await conveyor.enqueue("noop", {});
    await waitFor("noop to succeed", async () => (await conveyor.getJob(job.id))?.status === "succeeded");
    const done = await conveyor.getJob(job.id);
    expect(done!.executions).toHaveLength(1);
    expect(done!.executions[0]).toMatchObject({ attempt: 1, workerId: worker.id, outcome: "succeeded" });
    expect(done!.executions[0]!.finishedAt).toBeInstanceOf(Date);
    await worker.stop();
    expect((await conveyor.listWorkers()).map((w) => w.id)).not.toContain(worker.id);
  });

  it("counts the jobs held by every worker sharing one set of metrics in conveyor_active_jobs", async () => {
    held = new Promise<void>((resolve) => (releaseHeld = resolve));
    const metrics = await createWorkerMetrics();
    const first = conveyor.worker({ concurrency: 2, kinds: ["hold"], pollIntervalMs: 50, logger: silent, metrics });
    const second = conveyor.worker({ concurrency: 2, kinds: ["hold"], pollIntervalMs: 50, logger: silent, metrics });
    const active = async () => (await metrics.activeJobs.get()).values[0]?.value;
    await conveyor.enqueueMany(Array.from({ length: 4 }, () => ({ job: hold, payload: {} })));
    await Promise.all([first.start(), second.start()]);
    await waitFor("both workers to hold two jobs each", () => first.activeCount === 2 && second.activeCount === 2);
    expect(await active()).toBe(4);
    releaseHeld();
    await waitFor("the held jobs to finish", () => first.activeCount === 0 && second.activeCount === 0);
    expect(await active()).toBe(0);
    await second.stop();
    await first.stop();
  });

  it("observes how long each claimed job waited after its run_at (dequeue wait)", async () => {
    const worker = conveyor.worker({ concurrency: 1, pollIntervalMs: 50, logger: silent, metrics: await createWorkerMetrics() });
    const job = await conveyor.enqueue("noop", {}, { runAt: new Date(Date.now() - 40_000) });
    await worker.start();
    await waitFor("noop to succeed", async () => (await conveyor.getJob(job.id))?.status === "succeeded");
    await worker.stop();
    const { values } = await worker.metrics!.dequeueWait.get();
    const count = values.find((v) => v.metricName === "conveyor_dequeue_wait_seconds_count")!.value;
    const sum = values.find((v) => v.metricName === "conveyor_dequeue_wait_seconds_sum")!.value;
    expect(count).toBe(1);
    // 40 s before the claim, give or take the test's own pace (database and test clocks agree here).
    expect(sum).toBeGreaterThanOrEqual(39);
    expect(sum).toBeLessThan(60);
  });
});
