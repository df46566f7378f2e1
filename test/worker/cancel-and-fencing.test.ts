import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Conveyor, createWorkerMetrics, defineJob } from "../../packages/core/src/index.js";
import { createTestConveyor } from "../helpers/database.js";
import { emptyPayload, leaseExpiresAt, silent, sql } from "./support.js";
import { waitFor } from "../helpers/wait-for.js";

const aborts = new Map<string, string>();
const releases = new Map<string, () => void>();

/** Runs until released (or aborted, if it listens): lets a test hold a job in `running`. */
const held = defineJob({
  kind: "held",
  schema: emptyPayload,
  maxAttempts: 3,
  handler: ({ signal, job }) =>
    new Promise<string>((resolve, reject) => {
      releases.set(job.executionId, () => resolve(`done by ${job.workerId}`));
      signal.addEventListener("abort", () => {
        aborts.set(job.executionId, (signal.reason as Error).name);
        reject(signal.reason);
      });
    }),
});
/** Ignores its signal: only a release ends it. */
const stubborn = defineJob({
  kind: "stubborn",
  schema: emptyPayload,
  handler: ({ signal, job }) =>
    new Promise<string>((resolve) => {
      signal.addEventListener("abort", () => aborts.set(job.executionId, (signal.reason as Error).name));
      releases.set(job.executionId, () => resolve(`done by ${job.workerId}`));
    }),
});

describe("cancellation and fencing", () => {
  let conveyor: Conveyor;
  let cleanup: () => Promise<void>;
  beforeAll(async () => {
    ({ conveyor, cleanup } = await createTestConveyor({ jobs: [held, stubborn], logger: silent }));
  });
  afterAll(() => cleanup());

  const running = (id: string) => waitFor(`job ${id} running`, async () => {
    const job = await conveyor.getJob(id);
    return job?.status === "running" && releases.has(job.currentExecutionId!) ? job : null;
  });

  it("cancels a queued job at once; no worker ever runs it", async () => {
    const { id } = await conveyor.enqueue(held, {}, { delayMs: 60_000 });
    const { outcome, job } = await conveyor.cancel(id);
    expect(outcome).toBe("cancelled");
    expect(job.status).toBe("cancelled");
    expect(job.finishedAt).toBeInstanceOf(Date);
    expect((await conveyor.getJob(id))!.executions).toHaveLength(0);
  });

  it("a running job's signal aborts within one heartbeat and it ends cancelled when the handler returns", async () => {
    const worker = conveyor.worker({ concurrency: 2, leaseMs: 3_000, heartbeatMs: 200, pollIntervalMs: 20, logger: silent });
    await worker.start();
    try {
      const { id } = await conveyor.enqueue(held, {});
      const job = await running(id);
      const { outcome, job: flagged } = await conveyor.cancel(id);
      expect(outcome).toBe("cancel_requested");
      expect(flagged).toMatchObject({ status: "running", cancelRequested: true });
      await waitFor("cancelled", async () => (await conveyor.getJob(id))!.status === "cancelled", 5_000);
      expect(aborts.get(job.currentExecutionId!)).toBe("JobCancelledError");
      const done = await conveyor.getJob(id);
      expect(done!.executions.map((e) => e.outcome)).toEqual(["cancelled"]);
      expect(done!.attempts).toBe(1);
    } finally {
      await worker.stop({ graceMs: 0 });
    }
  });

  it("a terminal job is reported as already terminal and nothing changes", async () => {
    const { id } = await conveyor.enqueue(held, {}, { delayMs: 60_000 });
    await conveyor.cancel(id);
    const before = await conveyor.getJob(id);
    const { outcome, job } = await conveyor.cancel(id);
    expect(outcome).toBe("already_terminal");
    expect(job.updatedAt).toEqual(before!.updatedAt);
    await expect(conveyor.cancel("01900000-0000-7000-8000-000000000000")).rejects.toMatchObject({ code: "NOT_FOUND" });
  });

  it("a worker that lost its lease is aborted and its late completion is fenced", async () => {
    const a = conveyor.worker({ id: "worker-a", concurrency: 1, leaseMs: 60_000, heartbeatMs: 150, pollIntervalMs: 20, logger: silent, metrics: await createWorkerMetrics() });
    await a.start();
    const { id } = await conveyor.enqueue(stubborn, {});
    const first = await running(id);
    expect(first.lockedBy).toBe("worker-a");
    // Simulate a pause past the lease: expire it in the database, and let a sweep reclaim it.
    // A's 150 ms heartbeat may renew the lease between the two statements (seen on a loaded
    // machine), so expire and sweep again until the sweep takes the job.
    const b = conveyor.worker({ id: "worker-b", concurrency: 1, leaseMs: 60_000, heartbeatMs: 150, pollIntervalMs: 20, logger: silent });
    await waitFor("the expired lease reclaimed", async () => {
      await sql(conveyor, `UPDATE {{schema}}.jobs SET lease_expires_at = now() - interval '1 second' WHERE id = $1`, [id]);
      return (await b.reclaimExpired()) === 1;
    }, 10_000);
    await b.start();
    try {
      // A new attempt, by whichever worker claims first: A's slot is free once its lease is lost.
      const second = await running(id);
      expect(second.currentExecutionId).not.toBe(first.currentExecutionId);
      // A's next heartbeat finds the job gone: its signal aborts with a lease-lost reason.
      await waitFor("A aborted", () => aborts.get(first.currentExecutionId!) === "LeaseLostError", 5_000);
      // A's handler finishes anyway; its completion must not be written.
      releases.get(first.currentExecutionId!)!();
      await waitFor("A counted a fenced write", async () => {
        const metric = await a.metrics!.fencedWrites.get();
        return metric.values.reduce((sum, v) => sum + v.value, 0) > 0;
      }, 5_000);
      expect((await conveyor.getJob(id))!.status).toBe("running");
      releases.get(second.currentExecutionId!)!();
      await waitFor("the new attempt succeeded", async () => (await conveyor.getJob(id))!.status === "succeeded");
      const done = await conveyor.getJob(id);
      expect(done!.result).toBe(`done by ${second.lockedBy}`);
      expect(done!.executions.map((e) => [e.workerId, e.outcome])).toEqual([
        ["worker-a", "lease_expired"],
        [second.lockedBy, "succeeded"],
      ]);
    } finally {
      await Promise.all([a.stop({ graceMs: 0 }), b.stop({ graceMs: 0 })]);
    }
  });

  it("lease renewal passes over a job row another transaction holds: the worker's other jobs are renewed meanwhile, and that one once it is free", async () => {
    const worker = conveyor.worker({ id: "worker-busy-row", concurrency: 2, leaseMs: 60_000, heartbeatMs: 100, pollIntervalMs: 20, logger: silent });
    await worker.start();
    const holder = await conveyor.pool.connect();
    const leaseOf = (id: string) => leaseExpiresAt(conveyor, id);
    try {
      const [a, b] = await Promise.all([conveyor.enqueue(held, {}), conveyor.enqueue(held, {})]);
      const [jobA, jobB] = await Promise.all([running(a.id), running(b.id)]);
      // What a handler's transaction does to fence an effect (docs/reliability.md, What is not promised): lock the job row, and keep it.
      await holder.query("BEGIN");
      await holder.query(`SELECT 1 FROM "${conveyor.options.schema}".jobs WHERE id = $1 FOR SHARE`, [a.id]);
      const heldLease = await leaseOf(a.id);
      // Two renewals of B after the lock: a renewal that waited for A's row would have stalled B's too.
      let seen = await leaseOf(b.id);
      for (const round of [1, 2]) {
        const before = seen;
        seen = await waitFor(`B's lease renewed (${round})`, async () => {
          const lease = await leaseOf(b.id);
          return lease > before ? lease : null;
        }, 5_000);
      }
      expect(await leaseOf(a.id), "A's lease, untouched while its row is held").toBe(heldLease);
      expect(aborts.has(jobA.currentExecutionId!), "A is still its worker's: not treated as lost").toBe(false);
      await holder.query("ROLLBACK");
      await waitFor("A's lease renewed once its row is free", async () => (await leaseOf(a.id)) > heldLease, 5_000);
      releases.get(jobA.currentExecutionId!)!();
      releases.get(jobB.currentExecutionId!)!();
      await waitFor("both succeeded", async () => {
        const jobs = await Promise.all([conveyor.getJob(a.id), conveyor.getJob(b.id)]);
        return jobs.every((job) => job?.status === "succeeded");
      });
    } finally {
      await holder.query("ROLLBACK").catch(() => undefined);
      holder.release();
      await worker.stop({ graceMs: 0 });
    }
  });

  it("a completion written after the lease was lost is refused by the execution-id fence", async () => {
    // Heartbeat far apart: A does not notice the loss before its handler returns.
    const a = conveyor.worker({ id: "slow-a", concurrency: 1, leaseMs: 60_000, heartbeatMs: 20_000, pollIntervalMs: 20, logger: silent, metrics: await createWorkerMetrics() });
    await a.start();
    const { id } = await conveyor.enqueue(stubborn, {});
    const first = await running(id);
    await sql(conveyor, `UPDATE {{schema}}.jobs SET lease_expires_at = now() - interval '1 second' WHERE id = $1`, [id]);
    const b = conveyor.worker({ id: "slow-b", concurrency: 1, leaseMs: 60_000, heartbeatMs: 20_000, pollIntervalMs: 20, logger: silent });
    expect(await b.reclaimExpired()).toBe(1);
    await b.start();
    try {
      const second = await running(id);
      releases.get(first.currentExecutionId!)!();
      await waitFor("A's completion fenced", async () => {
        const metric = await a.metrics!.fencedWrites.get();
        return metric.values.some((v) => v.labels.operation === "complete" && v.value === 1);
      }, 5_000);
      const during = await conveyor.getJob(id);
      expect(during).toMatchObject({ status: "running", lockedBy: "slow-b", currentExecutionId: second.currentExecutionId });
      releases.get(second.currentExecutionId!)!();
      await waitFor("B succeeded", async () => (await conveyor.getJob(id))!.status === "succeeded");
      expect((await conveyor.getJob(id))!.result).toBe("done by slow-b");
    } finally {
      await Promise.all([a.stop({ graceMs: 0 }), b.stop({ graceMs: 0 })]);
    }
  });
});
