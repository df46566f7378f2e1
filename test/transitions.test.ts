/**
 * The transition table (src/core/transitions.ts) against what the store
 * does to real rows, for the events that do not end an attempt (those are
 * in test/worker/attempt-end-rules.test.ts and test/worker/reclaimer.test.ts):
 * a claim, a cancel in every state, a requeue from the dead-letter queue,
 * and a dependency's release. Each job is brought to its state through the
 * ordinary paths, then the event is sent and the state it lands in is
 * compared with the table's row (no row: the job does not move).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { JOB_STATUSES, type JobStatus } from "../packages/core/src/core/states.js";
import { transitionOf } from "../packages/core/src/core/transitions.js";
import { type Conveyor, defineJob } from "../packages/core/src/index.js";
import { createTestConveyor, dbOf, storeOf } from "./helpers/database.js";
import { emptyPayload, silent, sql } from "./worker/support.js";

const task = defineJob({ kind: "table-task", schema: emptyPayload, maxAttempts: 3, handler: () => {} });

describe("the transition table against the store", () => {
  let conveyor: Conveyor;
  let cleanup: () => Promise<void>;
  beforeAll(async () => {
    ({ conveyor, cleanup } = await createTestConveyor({ jobs: [task], logger: silent }));
  });
  afterAll(() => cleanup());

  let queues = 0;
  /** A job of its own queue, claimed: running, with its execution id. */
  async function running(): Promise<{ id: string; executionId: string; queue: string }> {
    const queue = `table-${++queues}`;
    const { id } = await conveyor.enqueue(task, {}, { queue });
    const [claimed] = await storeOf(conveyor).jobClaim("table-worker", 1, ["table-task"], [queue], 60_000);
    expect(claimed!.id).toBe(id);
    return { id, executionId: claimed!.executionId, queue };
  }
  async function ended(nextStatus: "retrying" | "dead"): Promise<string> {
    const job = await running();
    await storeOf(conveyor).jobEndAttempts([{
      jobId: job.id, executionId: job.executionId, outcome: "failed", error: null,
      event: nextStatus === "dead" ? "permanent_error" : "attempt_failed", delayMs: 60_000,
    }]);
    return job.id;
  }

  /** A job brought to `status` through the ordinary paths. */
  async function inState(status: JobStatus): Promise<string> {
    switch (status) {
      case "waiting": {
        const parent = await conveyor.enqueue(task, {}, { queue: `table-${++queues}`, delayMs: 600_000 });
        return (await conveyor.enqueue(task, {}, { dependsOn: [parent.id], queue: `table-${++queues}` })).id;
      }
      case "queued":
        return (await conveyor.enqueue(task, {}, { queue: `table-${++queues}`, delayMs: 600_000 })).id;
      case "running":
        return (await running()).id;
      case "retrying":
        return ended("retrying");
      case "dead":
        return ended("dead");
      case "succeeded": {
        const job = await running();
        await storeOf(conveyor).jobComplete([{ jobId: job.id, executionId: job.executionId, result: null }]);
        return job.id;
      }
      case "cancelled": {
        const { id } = await conveyor.enqueue(task, {}, { queue: `table-${++queues}`, delayMs: 600_000 });
        await conveyor.cancel(id);
        return id;
      }
      case "sleeping":
        return (await asleep(600_000)).id;
    }
  }
  /** A running job suspended on a sleep of `ms`, as a handler's `sleep` suspends it, with a step recorded first. */
  async function asleep(ms: number): Promise<{ id: string }> {
    const job = await running();
    const steps = dbOf(conveyor).steps;
    await steps.jobStepRecord({ jobId: job.id, executionId: job.executionId, name: "first", state: "completed", result: "1", error: null, ranMs: 1 });
    const suspended = await steps.jobSuspend({
      jobId: job.id, executionId: job.executionId, workerId: "table-worker", tenant: "default", name: "nap", kind: "sleep", at: null, inMs: ms, event: null, key: null,
    });
    expect(suspended.kind).toBe("suspended");
    return job;
  }
  const statusOf = async (id: string) => (await conveyor.getJob(id))!.status;

  for (const status of JOB_STATUSES) {
    it(`cancel in ${status}: ${transitionOf(status, "cancel") ?? "refused, unchanged"}`, async () => {
      const id = await inState(status);
      expect(await statusOf(id)).toBe(status);
      const { outcome, job } = await conveyor.cancel(id);
      const to = transitionOf(status, "cancel");
      expect(job.status).toBe(to ?? status);
      expect(outcome).toBe(to === null ? "already_terminal" : to === "running" ? "cancel_requested" : "cancelled");
      if (to === "running") expect(job.cancelRequested).toBe(true);
    });
  }

  it("a claim takes the ready states, and only them, into running", async () => {
    const ids = new Map<JobStatus, string>();
    for (const status of JOB_STATUSES) ids.set(status, await inState(status));
    // Due now: a claim looks at run_at too.
    await sql(conveyor, `UPDATE {{schema}}.jobs SET run_at = now() - interval '1 second' WHERE id = ANY($1) AND status <> 'running'`, [[...ids.values()]]);
    const queues = (await sql(conveyor, `SELECT DISTINCT queue FROM {{schema}}.jobs WHERE id = ANY($1)`, [[...ids.values()]])).rows.map((r: { queue: string }) => r.queue);
    const claimed = await storeOf(conveyor).jobClaim("table-claimer", 100, ["table-task"], queues, 60_000);
    const claimedFrom = JOB_STATUSES.filter((status) => claimed.some((job) => job.id === ids.get(status)));
    expect(claimedFrom.sort()).toEqual(JOB_STATUSES.filter((status) => transitionOf(status, "claim") === "running").sort());
    for (const job of claimed) await storeOf(conveyor).jobComplete([{ jobId: job.id, executionId: job.executionId, result: null }]);
  });

  it("a requeue moves a dead job as the table says", async () => {
    const id = await inState("dead");
    const { rows } = await sql(conveyor, `SELECT dead_letter_id FROM {{schema}}.jobs WHERE id = $1`, [id]);
    const job = await conveyor.deadLetters.requeue(rows[0].dead_letter_id);
    expect(job.status).toBe(transitionOf("dead", "requeue"));
  });

  for (const status of JOB_STATUSES) {
    it(`a resume in ${status}: ${transitionOf(status, "rerun_from_step") ?? "refused, unchanged"}`, async () => {
      const id = await inState(status);
      const to = transitionOf(status, "rerun_from_step");
      const resumed = conveyor.steps.resume(id);
      if (to === null) await expect(resumed).rejects.toThrow(`is ${status}; only a job that is`);
      else expect((await resumed).status).toBe(to);
      if (to === null) expect(await statusOf(id)).toBe(status);
      if (status === "dead") {
        // Out of the dead-letter queue with its row.
        const { rows } = await sql(conveyor, `SELECT dead_letter_id, dead_reason FROM {{schema}}.jobs WHERE id = $1`, [id]);
        expect(rows).toEqual([{ dead_letter_id: null, dead_reason: null }]);
      }
    });
  }

  it("the waker moves a sleeping job whose time has come as the table says, and leaves the others asleep", async () => {
    const due = await asleep(0);
    const later = await asleep(600_000);
    const woken = await dbOf(conveyor).steps.jobWakeSleeping(1000);
    expect(woken.map((job) => job.id)).toContain(due.id);
    expect(await statusOf(due.id)).toBe(transitionOf("sleeping", "wake"));
    expect(await statusOf(later.id)).toBe("sleeping");
  });

  it("a dependency's success releases a waiting job as the table says", async () => {
    const parent = await running();
    const { id } = await conveyor.enqueue(task, {}, { dependsOn: [parent.id], queue: `table-${++queues}` });
    expect(await statusOf(id)).toBe("waiting");
    await storeOf(conveyor).jobComplete([{ jobId: parent.id, executionId: parent.executionId, result: null }]);
    // Released in the completion's own transaction: no wait.
    expect(await statusOf(id)).toBe(transitionOf("waiting", "dependencies_met"));
  });
});
