/**
 * The lease renewal statement (jobHeartbeat) against a real PostgreSQL: it
 * never waits for a row lock. A job whose row another transaction holds is
 * answered as still held but not renewed, its lease left as it was; a job
 * that is no longer this execution's is not answered at all.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defineJob } from "../../packages/core/src/index.js";
import { createTestConveyor, storeOf, type TestConveyor } from "../helpers/database.js";
import { emptyPayload, leaseExpiresAt, silent, sql } from "./support.js";

const noop = defineJob({ kind: "renewal-noop", schema: emptyPayload, handler: () => {} });

let t: TestConveyor;
beforeAll(async () => {
  t = await createTestConveyor({ jobs: [noop], logger: silent });
});
afterAll(() => t?.cleanup());

/** Rejects when `promise` has not settled within `ms`: a renewal that waits for a row lock fails the test instead of hanging it. */
function within<T>(ms: number, what: string, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not resolve within ${ms} ms`)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

const leaseOf = (id: string) => leaseExpiresAt(t.conveyor, id);

describe("lease renewal", () => {
  it("passes over a row another transaction holds, renews the rest, and leaves out a job that is no longer this execution's", async () => {
    const { conveyor, schema } = t;
    await conveyor.enqueueMany([0, 1, 2].map(() => ({ job: noop, payload: {} })));
    const [busy, free, taken] = await storeOf(conveyor).jobClaim("renewal-worker", 3, ["renewal-noop"], null, 60_000);
    const held = [busy!, free!, taken!].map((job) => ({ jobId: job.id, executionId: job.executionId }));
    // Another execution owns `taken` now, as after a reclaim and a new claim.
    await sql(conveyor, "UPDATE {{schema}}.jobs SET current_execution_id = $2 WHERE id = $1", [taken!.id, "01900000-0000-7000-8000-000000000001"]);

    const holder = await conveyor.pool.connect();
    try {
      await holder.query("BEGIN");
      await holder.query(`SELECT 1 FROM "${schema}".jobs WHERE id = $1 FOR SHARE`, [busy!.id]);
      const before = { busy: await leaseOf(busy!.id), free: await leaseOf(free!.id) };

      // Resolves while the lock is held: a renewal that waited for it would hang until the ROLLBACK below.
      const states = await within(5_000, "the renewal", storeOf(conveyor).jobHeartbeat(held, 600_000));
      expect(states.map((s) => [s.jobId, s.renewed]).sort()).toEqual([[busy!.id, false], [free!.id, true]].sort());
      expect(await leaseOf(busy!.id), "the held row's lease, untouched").toBe(before.busy);
      expect(await leaseOf(free!.id), "the free row's lease, renewed").toBeGreaterThan(before.free);

      await holder.query("ROLLBACK");
      const after = await storeOf(conveyor).jobHeartbeat(held, 600_000);
      expect(after.map((s) => [s.jobId, s.renewed]).sort()).toEqual([[busy!.id, true], [free!.id, true]].sort());
      expect(await leaseOf(busy!.id), "renewed once its row is free").toBeGreaterThan(before.busy);
    } finally {
      await holder.query("ROLLBACK").catch(() => undefined);
      holder.release();
    }
  });

  it("reports the cancel flag of a held row it could not renew", async () => {
    const { conveyor, schema } = t;
    const queued = await conveyor.enqueue(noop, {});
    const [job] = await storeOf(conveyor).jobClaim("renewal-worker", 1, ["renewal-noop"], null, 60_000);
    expect(job!.id).toBe(queued.id);
    await conveyor.cancel(job!.id);
    const holder = await conveyor.pool.connect();
    try {
      await holder.query("BEGIN");
      await holder.query(`SELECT 1 FROM "${schema}".jobs WHERE id = $1 FOR SHARE`, [job!.id]);
      const [state] = await within(5_000, "the renewal", storeOf(conveyor).jobHeartbeat([{ jobId: job!.id, executionId: job!.executionId }], 600_000));
      expect(state).toMatchObject({ jobId: job!.id, renewed: false, cancelRequested: true });
    } finally {
      await holder.query("ROLLBACK");
      holder.release();
    }
  });
});
