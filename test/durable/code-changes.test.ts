/**
 * A handler deployed while its jobs are part-way through (docs/durable-execution.md,
 * "Changing code under running jobs"): records are matched by name, so a
 * renamed step runs again under its new name, an added step runs when first
 * reached, a removed step's record is ignored (and kept), reordered steps
 * each replay their own record, and a sleep keeps its recorded wake time.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { defineJob } from "../../packages/core/src/index.js";
import { createTestConveyor, type TestConveyor } from "../helpers/database.js";
import { waitFor } from "../helpers/wait-for.js";
import { silent, sql } from "../worker/support.js";

const calls: string[] = [];
const schema = z.object({});

/** Version 1: a, b, then a long sleep. */
const v1 = defineJob({
  kind: "deploy.flow",
  schema,
  async handler({ step, sleep }) {
    await step("a", () => (calls.push("v1:a"), "A"));
    await step("b", () => (calls.push("v1:b"), "B"));
    await step("gone", () => (calls.push("v1:gone"), "G"));
    await sleep("nap", 3_600_000);
    return "v1";
  },
});

/** Version 2, deployed while jobs sleep: b renamed to b2, gone removed, c added, a moved after b2. */
const v2 = defineJob({
  kind: "deploy.flow",
  schema,
  async handler({ step, sleep }) {
    const b2 = await step("b2", () => (calls.push("v2:b2"), "B2"));
    const a = await step("a", () => (calls.push("v2:a"), "A2"));
    await sleep("nap", 3_600_000);
    const c = await step("c", () => (calls.push("v2:c"), "C"));
    return [a, b2, c];
  },
});

let first: TestConveyor;
let second: TestConveyor;
beforeAll(async () => {
  first = await createTestConveyor({ jobs: [v1], logger: silent });
  second = await createTestConveyor({ jobs: [v2], logger: silent, schema: first.schema });
});
afterAll(async () => {
  await second?.cleanup();
  await first?.cleanup();
});

describe("changing a durable handler under running jobs", () => {
  it("matches records by name: renamed and added steps run, removed ones are ignored, the sleep keeps its time", async () => {
    const old = first.conveyor.worker({ concurrency: 1, pollIntervalMs: 20 });
    await old.start();
    const { id } = await first.conveyor.enqueue(v1, {});
    await waitFor("the job to sleep under v1", async () => (await first.conveyor.getJob(id))?.status === "sleeping", 10_000);
    await old.stop();
    const wakeAt = (await first.conveyor.steps.list(id)).find((record) => record.name === "nap")!.wakeAt!;

    // Deployed: v2 runs the job now (as if woken early), then after its recorded time.
    const fresh = second.conveyor.worker({ concurrency: 1, pollIntervalMs: 20, wakeIntervalMs: 20 });
    await fresh.start();
    try {
      await sql(second.conveyor, "UPDATE {{schema}}.jobs SET run_at = now() WHERE id = $1", [id]);
      await waitFor("v2 to run the job and sleep again", async () => calls.includes("v2:b2") && (await second.conveyor.getJob(id))?.status === "sleeping", 10_000);
      const again = (await second.conveyor.steps.list(id)).find((record) => record.name === "nap")!;
      expect(again.wakeAt).toEqual(wakeAt); // the same sleep, to its recorded time
      // Its time comes.
      await sql(second.conveyor, "UPDATE {{schema}}.job_steps SET wake_at = now() WHERE job_id = $1 AND name = 'nap'", [id]);
      await sql(second.conveyor, "UPDATE {{schema}}.jobs SET run_at = now() WHERE id = $1", [id]);
      const job = await second.conveyor.waitFor(id, { timeoutMs: 10_000 });
      expect(job.status).toBe("succeeded");
      expect(job.result).toEqual(["A", "B2", "C"]);
    } finally {
      await fresh.stop();
    }
    // a replayed v1's record; b2 ran once under its new name; c ran once; gone never ran again.
    expect(calls).toEqual(["v1:a", "v1:b", "v1:gone", "v2:b2", "v2:c"]);
    const records = await second.conveyor.steps.list(id);
    expect(records.map((record) => [record.name, record.state])).toEqual([
      ["a", "completed"],
      ["b", "completed"],
      ["gone", "completed"],
      ["nap", "awake"],
      ["b2", "completed"],
      ["c", "completed"],
    ]);
  });
});
