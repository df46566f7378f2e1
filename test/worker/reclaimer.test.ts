/**
 * The reclaim sweep as a worker runs it on its own interval, observed
 * through its test signal (each sweep reported as it ends) rather than by
 * sleeping: a live lease is left alone by sweeps known to have run, an
 * expired one is taken by the next, and each job's end is the one core
 * decides (decideExpiredLease), a requested cancel included.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Conveyor, createWorkerMetrics, defineJob, type Worker } from "../../packages/core/src/index.js";
import type { ReclaimSweep } from "../../packages/core/src/worker/reclaimer.js";
import { workerTestSignals } from "../../packages/core/src/worker/test-signals.js";
import { createTestConveyor, storeOf } from "../helpers/database.js";
import { emptyPayload, silent, sql } from "./support.js";

const held = defineJob({ kind: "reclaimer-held", schema: emptyPayload, maxAttempts: 2, handler: () => {} });

describe("the reclaimer", () => {
  let conveyor: Conveyor;
  let cleanup: () => Promise<void>;
  beforeAll(async () => {
    ({ conveyor, cleanup } = await createTestConveyor({ jobs: [held], logger: silent }));
  });
  afterAll(() => cleanup());

  /** A job claimed by a worker that is not running (no heartbeat), with a lease of `leaseMs`. */
  let queues = 0;
  async function claimed(leaseMs: number) {
    const queue = `reclaimer-${++queues}`; // its own: a job an earlier test put back is not claimed here
    const { id } = await conveyor.enqueue(held, {}, { queue });
    const [job] = await storeOf(conveyor).jobClaim("gone-owner", 1, ["reclaimer-held"], [queue], leaseMs);
    expect(job!.id).toBe(id);
    return job!;
  }
  const expire = (id: string) => sql(conveyor, `UPDATE {{schema}}.jobs SET lease_expires_at = now() - interval '1 second' WHERE id = $1`, [id]);

  /** A worker that claims nothing (its queue holds no job) and sweeps every 20 ms, its sweeps reported. */
  async function sweeper(): Promise<{ worker: Worker; sweeps: { wait(timeoutMs?: number): Promise<ReclaimSweep> } }> {
    const worker = conveyor.worker({ queues: ["reclaimer-empty"], reclaimIntervalMs: 20, pollIntervalMs: 60_000, logger: silent, metrics: await createWorkerMetrics() });
    const sweeps = workerTestSignals(worker).reclaimer.swept;
    await worker.start();
    return { worker, sweeps };
  }

  it("leaves a live lease alone on every sweep it runs, and takes it on the first sweep after it expired", async () => {
    const job = await claimed(60_000);
    const { worker, sweeps } = await sweeper();
    try {
      // Both sweeps began after the claim: the second began after the first had ended.
      expect((await sweeps.wait()).reclaimed).toEqual([]);
      expect((await sweeps.wait()).reclaimed).toEqual([]);
      expect(await conveyor.getJob(job.id)).toMatchObject({ status: "running", currentExecutionId: job.executionId });

      await expire(job.id);
      // Sweeps that ended before the expiry (kept by the signal), and one in flight as it landed, find
      // nothing; the first to start after it takes the job.
      let sweep = await sweeps.wait();
      while (sweep.reclaimed.length === 0) sweep = await sweeps.wait();
      expect(sweep.reclaimed.map((moved) => [moved.id, moved.status, moved.attempts])).toEqual([[job.id, "retrying", 1]]);
      expect((await sweeps.wait()).reclaimed).toEqual([]); // taken once
    } finally {
      await worker.stop({ graceMs: 0 });
    }
    const after = await conveyor.getJob(job.id);
    expect(after!.executions.map((e) => [e.workerId, e.outcome])).toEqual([["gone-owner", "lease_expired"]]);
    expect(after!.lastError).toEqual({ name: "LeaseExpired", message: "lease expired on worker gone-owner" });
    expect(after!.executions[0]!.error).toEqual({ name: "LeaseExpired", message: "lease expired on worker gone-owner" });
  });

  it("ends cancelled a job whose cancel was requested, on any attempt, with no dead-letter entry", async () => {
    const first = await claimed(60_000);
    await sql(conveyor, `UPDATE {{schema}}.jobs SET attempts = max_attempts WHERE id = $1`, [first.id]); // its last attempt
    const second = await claimed(60_000);
    for (const job of [first, second]) {
      expect((await conveyor.cancel(job.id)).outcome).toBe("cancel_requested");
      await expire(job.id);
    }
    const reclaimed = await storeOf(conveyor).jobReclaimExpired(100);
    expect(reclaimed.map((job) => [job.id, job.status]).sort()).toEqual([[first.id, "cancelled"], [second.id, "cancelled"]].sort());
    for (const job of [first, second]) {
      const after = await conveyor.getJob(job.id);
      expect(after!.finishedAt).not.toBeNull();
      expect(after!.executions.map((e) => e.outcome)).toEqual(["cancelled"]);
    }
    const { rows } = await sql(conveyor, `SELECT count(*)::int AS n FROM {{schema}}.jobs WHERE id = ANY($1) AND dead_letter_id IS NOT NULL`, [[first.id, second.id]]);
    expect(rows[0].n).toBe(0);
  });

  it("dead-letters a job on its last attempt, with its history, through the worker's own sweep", async () => {
    const job = await claimed(60_000);
    await sql(conveyor, `UPDATE {{schema}}.jobs SET attempts = max_attempts WHERE id = $1`, [job.id]);
    await expire(job.id);
    const { worker, sweeps } = await sweeper();
    try {
      const sweep = await sweeps.wait();
      expect(sweep.reclaimed.map((moved) => [moved.id, moved.status])).toEqual([[job.id, "dead"]]);
      expect(await worker.metrics!.reclaimed.get()).toMatchObject({ values: [{ labels: { result: "dead" }, value: 1 }] });
    } finally {
      await worker.stop({ graceMs: 0 });
    }
    const letters = (await conveyor.deadLetters.list()).items.filter((letter) => letter.jobId === job.id);
    expect(letters).toHaveLength(1);
    expect(letters[0]!.reason).toBe("attempts_exhausted");
    expect(letters[0]!.history.map((entry) => [entry.workerId, entry.outcome])).toEqual([["gone-owner", "lease_expired"]]);
  });
});
