import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { Conveyor, ConflictError, defineJob, LeaseLostError, type Worker } from "../packages/core/src/index.js";
import { createTestConveyor, storeOf } from "./helpers/database.js";
import { silent, sql } from "./worker/support.js";
import { waitFor } from "./helpers/wait-for.js";

/** A promise a test resolves, to hold a handler at a point it chooses. */
class Gate {
  release!: () => void;
  readonly opened = new Promise<void>((resolve) => (this.release = resolve));
}
const gates = new Map<string, Gate>();
const gateFor = (key: string) => {
  if (!gates.has(key)) gates.set(key, new Gate());
  return gates.get(key)!;
};
/** Keys of the gates a handler is parked at. */
const parked = new Set<string>();
async function park(key: string): Promise<void> {
  parked.add(key);
  await gateFor(key).opened;
}
/** What handlers caught or saw, per job id. */
const seen = new Map<string, Record<string, unknown>>();
const note = (id: string, facts: Record<string, unknown>) => seen.set(id, { ...seen.get(id), ...facts });
const errorName = (error: unknown) => (error instanceof Error ? error.name : String(error));

const payload = z.object({ scenario: z.string() });

/**
 * One kind, several scenarios, so one worker per test runs it. Every
 * transaction writes a row to the test's `side_effects` table naming the
 * attempt and worker that wrote it.
 */
const transfer = defineJob({
  kind: "transfer",
  schema: payload,
  maxAttempts: 3,
  backoff: { baseMs: 10, capMs: 10, jitter: 0 },
  async handler(ctx) {
    const { job, payload, transaction } = ctx;
    const write = (tx: { query: (text: string, values?: unknown[]) => Promise<unknown> }) =>
      tx.query(`INSERT INTO ${sideTable} (job_id, attempt, worker_id) VALUES ($1, $2, $3)`, [job.id, job.attempt, job.workerId]);

    switch (payload.scenario) {
      case "plain":
        return transaction(async (tx) => {
          await write(tx);
          return { moved: 100, attempt: job.attempt };
        });

      case "stale":
        // The first attempt parks before its transaction; its lease is taken away meanwhile.
        if (job.attempt === 1) await park(`${job.id}:1`);
        try {
          return await transaction(async (tx) => {
            await write(tx);
            return { by: job.workerId, attempt: job.attempt };
          });
        } catch (error) {
          note(job.id, { [`attempt${job.attempt}`]: errorName(error), leaseLost: error instanceof LeaseLostError });
          throw error;
        }

      case "throws":
        return transaction(async (tx) => {
          await write(tx);
          if (job.attempt === 1) throw new Error("the ledger refused");
          return "second time lucky";
        });

      case "twice": {
        const first = await transaction(async (tx) => {
          await write(tx);
          return "once";
        });
        try {
          await transaction(async (tx) => write(tx));
        } catch (error) {
          note(job.id, { second: errorName(error), conflict: error instanceof ConflictError, first });
        }
        throw new Error("thrown after the commit");
      }

      case "cancelled":
        // Cancel is requested while the callback runs; the callback's own
        // heartbeat observes it (the job row is not locked yet, so it can).
        return transaction(async (tx) => {
          await write(tx);
          await park(`${job.id}:tx`);
          note(job.id, { renewed: await ctx.heartbeat(), aborted: ctx.signal.aborted });
          return "should not commit";
        }).catch((error: unknown) => {
          note(job.id, { error: errorName(error) });
          throw error;
        });

      default:
        throw new Error(`unknown scenario ${payload.scenario}`);
    }
  },
});

let sideTable = "";

describe("ctx.transaction", () => {
  let conveyor: Conveyor;
  let cleanup: () => Promise<void>;
  const workers: Worker[] = [];
  const startWorker = async (id: string) => {
    // Leases, heartbeats and sweeps far longer than any test: lease loss
    // happens only when a test takes the lease away in SQL.
    const worker = conveyor.worker({ id, concurrency: 1, leaseMs: 600_000, heartbeatMs: 200_000, reclaimIntervalMs: 600_000, pollIntervalMs: 50 });
    workers.push(worker);
    await worker.start();
    return worker;
  };
  const sideRows = async (jobId: string) =>
    (await sql(conveyor, `SELECT attempt, worker_id FROM ${sideTable} WHERE job_id = $1 ORDER BY attempt`, [jobId])).rows;
  const finished = (id: string) =>
    waitFor(`job ${id} to finish`, async () => {
      const job = await conveyor.getJob(id);
      return job && ["succeeded", "cancelled", "dead"].includes(job.status) ? job : null;
    });

  beforeAll(async () => {
    ({ conveyor, cleanup } = await createTestConveyor({ jobs: [transfer] as never, logger: silent }));
    sideTable = `"${conveyor.options.schema}".side_effects`;
    await sql(conveyor, `CREATE TABLE ${sideTable} (job_id uuid NOT NULL, attempt int NOT NULL, worker_id text NOT NULL)`);
  });
  afterEach(async () => {
    for (const gate of gates.values()) gate.release();
    await Promise.all(workers.splice(0).map((worker) => worker.stop({ graceMs: 0 })));
  });
  afterAll(() => cleanup());

  it("commits the handler's writes and the job's success together, once", async () => {
    await startWorker("w-plain");
    const { id } = await conveyor.enqueue(transfer, { scenario: "plain" });
    const job = await finished(id);
    expect(job).toMatchObject({ status: "succeeded", attempts: 1, result: { moved: 100, attempt: 1 } });
    expect(job.executions.map((e) => e.outcome)).toEqual(["succeeded"]);
    expect(await sideRows(id)).toEqual([{ attempt: 1, worker_id: "w-plain" }]);
  });

  it("refuses a stale owner's transaction at commit: its row never exists, the live owner's does", async () => {
    await startWorker("w-stale");
    const { id } = await conveyor.enqueue(transfer, { scenario: "stale" });
    await waitFor("the first attempt to park", () => parked.has(`${id}:1`));
    // The lease runs out while the first owner is parked; the sweep returns
    // the job to the queue and a second worker takes it and runs it to the end.
    await sql(conveyor, `UPDATE {{schema}}.jobs SET lease_expires_at = now() - interval '1 second' WHERE id = $1`, [id]);
    expect(await storeOf(conveyor).jobReclaimExpired(10)).toHaveLength(1);
    await startWorker("w-live");
    const done = await finished(id);
    expect(done).toMatchObject({ status: "succeeded", result: { by: "w-live", attempt: 2 } });

    // The stale owner wakes and tries to commit: refused, rolled back.
    gateFor(`${id}:1`).release();
    await waitFor("the stale attempt to be refused", () => seen.get(id)?.attempt1);
    expect(seen.get(id)).toEqual({ attempt1: "LeaseLostError", leaseLost: true });
    expect(await sideRows(id)).toEqual([{ attempt: 2, worker_id: "w-live" }]);
    const after = await conveyor.getJob(id);
    expect(after).toMatchObject({ status: "succeeded", result: { by: "w-live", attempt: 2 } });
    expect(after!.executions.map((e) => [e.attempt, e.outcome])).toEqual([
      [1, "lease_expired"],
      [2, "succeeded"],
    ]);
  });

  it("rolls back the writes of a callback that throws, and the job is retried as usual", async () => {
    await startWorker("w-throws");
    const { id } = await conveyor.enqueue(transfer, { scenario: "throws" });
    const job = await finished(id);
    expect(job).toMatchObject({ status: "succeeded", attempts: 2, result: "second time lucky" });
    expect(job.executions.map((e) => e.outcome)).toEqual(["failed", "succeeded"]);
    expect(job.executions[0]!.error).toMatchObject({ message: "the ledger refused" });
    expect(await sideRows(id)).toEqual([{ attempt: 2, worker_id: "w-throws" }]);
  });

  it("refuses a second transaction, and a throw after the commit leaves the job succeeded", async () => {
    await startWorker("w-twice");
    const { id } = await conveyor.enqueue(transfer, { scenario: "twice" });
    const job = await finished(id);
    await waitFor("the handler to finish", () => seen.get(id)?.second);
    expect(seen.get(id)).toEqual({ second: "ConflictError", conflict: true, first: "once" });
    expect(job).toMatchObject({ status: "succeeded", attempts: 1, result: "once", lastError: null });
    expect(job.executions.map((e) => e.outcome)).toEqual(["succeeded"]);
    expect(await sideRows(id)).toEqual([{ attempt: 1, worker_id: "w-twice" }]);
    // The worker wrote no outcome of its own afterwards.
    const again = await conveyor.getJob(id);
    expect(again!.executions.map((e) => e.outcome)).toEqual(["succeeded"]);
  });

  it("rolls back when the signal aborts before the commit (cancel), and the job ends cancelled", async () => {
    await startWorker("w-cancel");
    const { id } = await conveyor.enqueue(transfer, { scenario: "cancelled" });
    await waitFor("the callback to park", () => parked.has(`${id}:tx`));
    expect((await conveyor.cancel(id)).outcome).toBeDefined();
    gateFor(`${id}:tx`).release();
    const job = await finished(id);
    expect(seen.get(id)).toEqual({ renewed: true, aborted: true, error: "JobCancelledError" });
    expect(job.status).toBe("cancelled");
    expect(job.result).toBeNull();
    expect(await sideRows(id)).toEqual([]);
  });
});
