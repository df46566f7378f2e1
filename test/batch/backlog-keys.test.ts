/**
 * Batches over several keys under a backlog: with the worker's slots all
 * taken, batches still fill to maxSize, rather than every key's gathering
 * leaving part-filled each time the slots fill; and a worker whose every
 * slot is gathered, with no gathering able to fill, starts one at once
 * rather than waiting out maxWaitMs.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { defineJob } from "../../packages/core/src/index.js";
import type { Worker } from "../../packages/core/src/worker/worker.js";
import { workerTestSignals } from "../../packages/core/src/worker/test-signals.js";
import { createTestConveyor, type TestConveyor } from "../helpers/database.js";
import { waitFor } from "../helpers/wait-for.js";
import { silent, statusCounts } from "../worker/support.js";

const KEYS = 5;
const JOBS = 2_000;
const MAX_SIZE = 25;
const CONCURRENCY = 100; // below KEYS × MAX_SIZE: the slots cannot hold a full gathering of every key at once

/** Every batch the handler ran: its key, its size, and whether the worker's stop had begun. */
const batches: Array<{ key: string; size: number; afterStop: boolean }> = [];
let stopping = false;

const perKey = defineJob({
  kind: "batch.backlog-keys",
  schema: z.object({ key: z.string() }),
  // No batch leaves by time while the test runs: each one leaves full, by the worker's stop, or early by the gatherer's rule.
  batch: { maxSize: MAX_SIZE, maxWaitMs: 60_000, key: (payload) => payload.key },
  async batchHandler({ jobs }) {
    batches.push({ key: jobs[0]!.payload.key, size: jobs.length, afterStop: stopping });
    // Batches of unequal lengths end apart, so slots free a few at a time, as under real work.
    await sleep(1 + (batches.length % 4) * 3);
    return jobs.map(() => null);
  },
});

const few = defineJob({
  kind: "batch.more-keys-than-slots",
  schema: z.object({ key: z.string() }),
  batch: { maxSize: 10, maxWaitMs: 60_000, key: (payload) => payload.key },
  async batchHandler({ jobs }) {
    return jobs.map(() => null);
  },
});

let t: TestConveyor;
let worker: Worker | undefined;

beforeAll(async () => {
  t = await createTestConveyor({ jobs: [perKey, few], logger: silent });
});
afterAll(async () => {
  await worker?.stop();
  await t?.cleanup();
});

describe("batches over several keys under a backlog", () => {
  it("fill to maxSize with every slot of the worker taken", async () => {
    // Round-robin keys, the worst order: every key's gathering grows in step with the others.
    await t.conveyor.enqueueMany(Array.from({ length: JOBS }, (_, i) => ({ job: perKey, payload: { key: `k${i % KEYS}` } })));
    worker = t.conveyor.worker({ concurrency: CONCURRENCY, pollIntervalMs: 20, kinds: [perKey.kind], logger: silent });
    const signals = workerTestSignals(worker).worker;
    await worker.start();
    // Every job claimed and the claim loop idle: what is still gathered is the backlog's tail.
    await waitFor("every job to be claimed", async () => !(await statusCounts(t.conveyor)).queued, 20_000);
    await signals.idle.wait(20_000);
    stopping = true;
    await worker.stop(); // leaves the tail's gatherings at once, at most one per key
    expect(await statusCounts(t.conveyor)).toEqual({ succeeded: JOBS });

    const sizes = batches.map((batch) => batch.size);
    const summary = JSON.stringify(sizes);
    expect(sizes.reduce((sum, size) => sum + size, 0)).toBe(JOBS);
    expect(Math.max(...sizes), summary).toBeLessThanOrEqual(MAX_SIZE);
    const average = JOBS / sizes.length;
    expect(average, summary).toBeGreaterThanOrEqual(0.9 * MAX_SIZE);
    const tail = batches.filter((batch) => batch.afterStop);
    expect(new Set(tail.map((batch) => batch.key)).size, summary).toBe(tail.length); // one per key at most
    // Before the stop, part-filled batches leave only while the first claims spread the slots over every key.
    const partBeforeStop = batches.filter((batch) => !batch.afterStop && batch.size < MAX_SIZE);
    expect(partBeforeStop.length, summary).toBeLessThanOrEqual(KEYS);
  });

  it("starts a gathering at once when every slot is gathered and none can fill", async () => {
    await worker?.stop();
    // Three slots, three keys, batches of ten: each key's gathering holds one slot and could only fill past maxWaitMs.
    const jobs = await t.conveyor.enqueueMany(Array.from({ length: 9 }, (_, i) => ({ job: few, payload: { key: `k${i % 3}` } })));
    worker = t.conveyor.worker({ concurrency: 3, pollIntervalMs: 20, kinds: [few.kind], logger: silent });
    await worker.start();
    for (const job of jobs) expect(await t.conveyor.waitFor(job.id, { timeoutMs: 10_000 })).toMatchObject({ status: "succeeded" });
  });
});
