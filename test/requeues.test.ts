/**
 * What ran a job again is recorded (job_requeues) by the statement that
 * moved it, and `getJob` names each, in order: a requeue of its dead
 * letter, a bulk retry (with the bulk action), a resume and a rerun from a
 * step (with the step), each between the attempts around it. A call that
 * moves no job records nothing, a bulk retry that only brings a retrying
 * job's attempt forward records nothing, and the records go with their job
 * (a bulk purge, retention). The table's CHECKs refuse a record that names the
 * wrong details.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { ConflictError, defineJob, type JobRequeue, NotFoundError, PermanentError } from "../packages/core/src/index.js";
import { jobsIn } from "./bulk-actions-support.js";
import { runUntilFinished } from "./cli/support.js";
import { countRows, createTestConveyor, type TestConveyor } from "./helpers/database.js";
import { silent, sql } from "./worker/support.js";

/** Jobs whose last step succeeds; the others fail it permanently. */
const healthy = new Set<string>();

/** A step that records, then one that fails for good until its job is healthy. */
const durable = defineJob({
  kind: "requeues.durable",
  schema: z.object({}),
  maxAttempts: 1,
  handler: async ({ job, step }) => {
    await step("prepare", () => "prepared");
    await step("send", () => {
      if (!healthy.has(job.id)) throw new PermanentError("send fails");
      return "sent";
    });
  },
});

/** Made dead, queued or retrying in SQL (bulk-actions-support.ts), never run. */
const idle = defineJob({ kind: "requeues.idle", schema: z.object({ n: z.number() }), handler: () => {} });

let t: TestConveyor;
beforeAll(async () => {
  t = await createTestConveyor({ jobs: [durable, idle], logger: silent });
});
afterAll(() => t?.cleanup());

const requeuesOf = async (id: string) => (await t.conveyor.getJob(id))!.requeues;
const rowsOf = (id: string) => countRows(t.conveyor, "job_requeues", "job_id = $1", [id]);
const deadLetterOf = async (jobId: string) => {
  const page = await t.conveyor.deadLetters.list({ limit: 1000 });
  return page.items.find((entry) => entry.jobId === jobId)!;
};
/** Run the durable jobs until none is left to run. */
const runDurable = () => runUntilFinished(t.conveyor, [durable.kind]);

describe("a job's requeues", () => {
  it("names each way it ran again, in order, between the attempts around it", async () => {
    const { id } = await t.conveyor.enqueue(durable, {});
    await runDurable();
    expect((await t.conveyor.getJob(id))!).toMatchObject({ status: "dead", requeues: [] });

    await t.conveyor.deadLetters.requeue((await deadLetterOf(id)).id);
    await runDurable();
    const operation = await t.conveyor.bulkActions.start({ action: "retry", filter: { kind: durable.kind, status: "dead" } });
    expect(await t.conveyor.bulkActions.run(operation.id)).toMatchObject({ status: "succeeded", touched: 1 });
    await runDurable();
    await t.conveyor.steps.resume(id);
    await runDurable();
    await t.conveyor.steps.rerunFrom(id, "send");
    healthy.add(id);
    await runDurable();

    const job = (await t.conveyor.getJob(id))!;
    expect(job.status).toBe("succeeded");
    expect(job.requeues.map(({ at, ...rest }) => rest)).toEqual([
      { action: "requeue", fromStep: null, bulkActionId: null },
      { action: "bulk_retry", fromStep: null, bulkActionId: operation.id },
      { action: "resume", fromStep: null, bulkActionId: null },
      { action: "rerun", fromStep: "send", bulkActionId: null },
    ] satisfies Array<Omit<JobRequeue, "at">>);
    // Five runs of one attempt each, a requeue between every two.
    expect(job.executions.map((execution) => [execution.attempt, execution.outcome])).toEqual([
      [1, "failed"],
      [1, "failed"],
      [1, "failed"],
      [1, "failed"],
      [1, "succeeded"],
    ]);
    job.requeues.forEach((requeue, i) => {
      expect(requeue.at).toBeInstanceOf(Date);
      expect(requeue.at.getTime()).toBeGreaterThanOrEqual(job.executions[i]!.finishedAt!.getTime());
      expect(requeue.at.getTime()).toBeLessThanOrEqual(job.executions[i + 1]!.startedAt.getTime());
    });
    // waitFor reads the job as getJob does.
    expect((await t.conveyor.waitFor(id)).requeues).toEqual(job.requeues);
  });

  it("records a resume and a rerun of a job that is not dead, as the job moves", async () => {
    const [queued] = await jobsIn(t.conveyor, "queued", 1, { kind: idle.kind });
    await sql(
      t.conveyor,
      `INSERT INTO {{schema}}.job_steps (job_id, name, kind, state, result, attempt, execution_id, started_at, finished_at, tenant)
       SELECT id, 'first', 'step', 'completed', '1', 1, {{schema}}.uuid_v7(), now(), now(), tenant FROM {{schema}}.jobs WHERE id = $1`,
      [queued],
    );
    await t.conveyor.steps.resume(queued!);
    await t.conveyor.steps.rerunFrom(queued!, "first");
    expect((await requeuesOf(queued!)).map((requeue) => [requeue.action, requeue.fromStep])).toEqual([
      ["resume", null],
      ["rerun", "first"],
    ]);
  });

  it("records nothing for a call that moves no job, nor for a bulk retry that only brings an attempt forward", async () => {
    const [dead] = await jobsIn(t.conveyor, "dead", 1, { kind: idle.kind });
    const entry = await deadLetterOf(dead!);
    await t.conveyor.deadLetters.requeue(entry.id);
    // The entry is gone: a second requeue finds nothing and records nothing.
    await expect(t.conveyor.deadLetters.requeue(entry.id)).rejects.toBeInstanceOf(NotFoundError);
    await expect(t.conveyor.steps.rerunFrom(dead!, "missing")).rejects.toBeInstanceOf(NotFoundError);
    expect(await rowsOf(dead!)).toBe(1);

    const [succeeded] = await jobsIn(t.conveyor, "succeeded", 1, { kind: idle.kind });
    await expect(t.conveyor.steps.resume(succeeded!)).rejects.toBeInstanceOf(ConflictError);
    expect(await rowsOf(succeeded!)).toBe(0);

    const [retrying] = await jobsIn(t.conveyor, "retrying", 1, { kind: idle.kind, queue: "requeues-retrying" });
    const operation = await t.conveyor.bulkActions.start({ action: "retry", filter: { queue: "requeues-retrying" } });
    expect(await t.conveyor.bulkActions.run(operation.id)).toMatchObject({ status: "succeeded", touched: 1 });
    expect((await t.conveyor.getJob(retrying!))!).toMatchObject({ status: "retrying", attempts: 1, requeues: [] });
  });

  it("are deleted with their job: by a purge and by retention", async () => {
    const [purged, pruned] = await jobsIn(t.conveyor, "dead", 2, { kind: idle.kind, queue: "requeues-deleted" });
    for (const id of [purged!, pruned!]) await t.conveyor.deadLetters.requeue((await deadLetterOf(id)).id);
    // Both end again: one now, one eight days ago (past the default age of finished jobs).
    await sql(t.conveyor, "UPDATE {{schema}}.jobs SET status = 'succeeded', started_at = now(), finished_at = now() WHERE id = $1", [purged]);
    await sql(
      t.conveyor,
      `UPDATE {{schema}}.jobs SET status = 'succeeded', started_at = now() - interval '8 days', finished_at = now() - interval '8 days' WHERE id = $1`,
      [pruned],
    );
    expect([await rowsOf(purged!), await rowsOf(pruned!)]).toEqual([1, 1]);

    const operation = await t.conveyor.bulkActions.start({ action: "purge", filter: { queue: "requeues-deleted", id: purged! } });
    expect(await t.conveyor.bulkActions.run(operation.id)).toMatchObject({ status: "succeeded", touched: 1 });
    expect(await t.conveyor.getJob(purged!)).toBeNull();
    expect(await rowsOf(purged!)).toBe(0);

    expect((await t.conveyor.prune()).jobs).toBeGreaterThanOrEqual(1);
    expect(await t.conveyor.getJob(pruned!)).toBeNull();
    expect(await rowsOf(pruned!)).toBe(0);
  });

  it("refuse a record whose details do not match its action", async () => {
    const insert = (action: string, fromStep: string | null, bulkActionId: string | null) =>
      sql(t.conveyor, "INSERT INTO {{schema}}.job_requeues (job_id, action, from_step, bulk_action_id) VALUES ({{schema}}.uuid_v7(), $1, $2, $3)", [
        action,
        fromStep,
        bulkActionId,
      ]);
    const bulk = "0190f5c2-0000-7000-8000-000000000000";
    for (const [action, fromStep, bulkActionId] of [
      ["rerun", null, null],
      ["resume", "a step", null],
      ["bulk_retry", null, null],
      ["requeue", null, bulk],
      ["rerun", "", null],
      ["retry", null, null],
    ] as const) {
      await expect(insert(action, fromStep, bulkActionId), `${action} ${fromStep} ${bulkActionId}`).rejects.toMatchObject({ code: "23514" });
    }
    await insert("bulk_retry", null, bulk);
    await insert("rerun", "a step", null);
  });
});
