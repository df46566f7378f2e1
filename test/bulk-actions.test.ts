/**
 * Bulk actions through the library, against real PostgreSQL: what each
 * action touches (exactly the jobs the filter and its states select),
 * batches, progress, cancel midway, running twice, takeover of an
 * operation whose process died, tenant scope, refused input, flows, workers
 * completing jobs while a cancel runs, and the batch's plan on dead jobs.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { BEFORE_EVERY_ID, bulkActionApply, bulkActionCandidates, type BulkBatchPlan } from "../packages/core/src/store/sql/bulk-action-batches.js";
import { type BulkAction, type BulkActionInput, type Conveyor, ConflictError, defineJob, flowJob, JOB_STATUSES, type JobStatus, NotFoundError, uuidv7, ValidationError } from "../packages/core/src/index.js";
import { changedIds, emptyTables, jobsIn, snapshot, tune } from "./bulk-actions-support.js";
import { countRows, createTestConveyor, type TestConveyor } from "./helpers/database.js";
import { asOneJobsTable, scans } from "./helpers/query-plans.js";
import { silent, sql } from "./worker/support.js";
import { waitFor } from "./helpers/wait-for.js";

const item = defineJob({ kind: "item", schema: z.object({ n: z.number().int() }), handler: async () => {} });
const other = defineJob({ kind: "other", schema: z.object({ n: z.number().int() }), handler: async () => {} });
const parent = defineJob({ kind: "parent", schema: z.object({}), handler: async () => {} });
const child = defineJob({ kind: "child", schema: z.object({}), handler: async () => {} });
/** Takes a few ms, so that a cancel's batches meet jobs running and finishing. */
const brief = defineJob({
  kind: "brief",
  schema: z.object({ n: z.number().int() }),
  maxAttempts: 1,
  handler: async () => {
    await new Promise((resolve) => setTimeout(resolve, 20));
  },
});
const jobs = [item, other, parent, child, brief];

let t: TestConveyor;
let conveyor: Conveyor;

beforeAll(async () => {
  t = await createTestConveyor({ jobs, logger: silent });
  conveyor = t.conveyor;
});
afterAll(() => t?.cleanup());
beforeEach(async () => {
  tune(conveyor, { batchSize: 500, windowRows: 5_000, pauseMs: 0 });
  await emptyTables(conveyor);
});

const ALL_STATES: readonly JobStatus[] = JOB_STATUSES;

/** Three jobs in every state in queue "a", and the same in queue "b" (outside the filter). */
async function everyState(): Promise<{ a: Record<JobStatus, string[]>; b: Record<JobStatus, string[]> }> {
  const a = {} as Record<JobStatus, string[]>;
  const b = {} as Record<JobStatus, string[]>;
  for (const state of ALL_STATES) {
    a[state] = await jobsIn(conveyor, state, 3, { queue: "a" });
    b[state] = await jobsIn(conveyor, state, 3, { queue: "b" });
  }
  return { a, b };
}

/** Start an action and run it to its end here. */
async function act(input: BulkActionInput, scope = {}): Promise<BulkAction> {
  const started = await conveyor.bulkActions.start(input, scope);
  return conveyor.bulkActions.run(started.id);
}

async function jobRow(id: string) {
  const { rows } = await sql(conveyor, "SELECT * FROM {{schema}}.jobs WHERE id = $1", [id]);
  return rows[0];
}

describe("each action touches exactly the jobs its filter and states select", () => {
  it("retry requeues dead jobs as a dead-letter requeue does, and runs retrying jobs now", async () => {
    const { a } = await everyState();
    const before = await snapshot(conveyor);
    const ended = await act({ action: "retry", filter: { queue: "a" } });
    expect(ended).toMatchObject({ status: "succeeded", action: "retry", total: 6, touched: 6, error: null, cancelRequested: false });
    expect(changedIds(before, await snapshot(conveyor))).toEqual([...a.dead, ...a.retrying].sort());
    for (const id of a.dead) {
      // Out of the dead-letter queue: the row carries no dead letter.
      expect(await jobRow(id)).toMatchObject({ status: "queued", attempts: 0, finished_at: null, cancel_requested: false, dead_letter_id: null, dead_reason: null });
    }
    for (const id of a.retrying) {
      const row = await jobRow(id);
      expect(row.status).toBe("retrying");
      expect(row.run_at.getTime()).toBeLessThanOrEqual(Date.now() + 1_000);
    }
  });

  it("cancel cancels jobs that have not started and asks running ones to stop, as cancel does", async () => {
    const { a } = await everyState();
    const before = await snapshot(conveyor);
    const ended = await act({ action: "cancel", filter: { queue: "a" } });
    expect(ended).toMatchObject({ status: "succeeded", total: 15, touched: 15 });
    expect(changedIds(before, await snapshot(conveyor))).toEqual([...a.waiting, ...a.queued, ...a.retrying, ...a.sleeping, ...a.running].sort());
    for (const id of [...a.waiting, ...a.queued, ...a.retrying, ...a.sleeping]) expect(await jobRow(id)).toMatchObject({ status: "cancelled", cancel_requested: true });
    for (const id of a.running) expect(await jobRow(id)).toMatchObject({ status: "running", cancel_requested: true, finished_at: null });
    // The same rule as the one-job cancel.
    const [single] = await jobsIn(conveyor, "queued", 1, { queue: "c" });
    const { job } = await conveyor.cancel(single!);
    expect(job).toMatchObject({ status: "cancelled", cancelRequested: true });
  });

  it("purge deletes finished jobs with their history, never unfinished ones", async () => {
    const { a, b } = await everyState();
    const ended = await act({ action: "purge", filter: { queue: "a" } });
    expect(ended).toMatchObject({ status: "succeeded", total: 9, touched: 9 });
    const purged = [...a.succeeded, ...a.cancelled, ...a.dead];
    expect(await countRows(conveyor, "jobs", "id = ANY($1)", [purged])).toBe(0);
    expect(await countRows(conveyor, "job_executions", "job_id = ANY($1)", [purged])).toBe(0);
    const kept = [...a.waiting, ...a.queued, ...a.running, ...a.retrying, ...a.sleeping, ...Object.values(b).flat()];
    expect(await countRows(conveyor, "jobs", "id = ANY($1)", [kept])).toBe(kept.length);
  });

  it("set_priority changes jobs that are not running and have not ended", async () => {
    const { a } = await everyState();
    const before = await snapshot(conveyor);
    const ended = await act({ action: "set_priority", filter: { queue: "a" }, priority: -7 });
    expect(ended).toMatchObject({ status: "succeeded", priority: -7, queue: null, total: 12, touched: 12 });
    expect(changedIds(before, await snapshot(conveyor))).toEqual([...a.waiting, ...a.queued, ...a.retrying, ...a.sleeping].sort());
    for (const id of [...a.waiting, ...a.queued, ...a.retrying, ...a.sleeping]) expect((await jobRow(id)).priority).toBe(-7);
  });

  it("move puts jobs that are not running and have not ended in another queue", async () => {
    const { a } = await everyState();
    const before = await snapshot(conveyor);
    const ended = await act({ action: "move", filter: { queue: "a" }, queue: "elsewhere" });
    expect(ended).toMatchObject({ status: "succeeded", queue: "elsewhere", priority: null, total: 12, touched: 12 });
    expect(changedIds(before, await snapshot(conveyor))).toEqual([...a.waiting, ...a.queued, ...a.retrying, ...a.sleeping].sort());
    for (const id of [...a.waiting, ...a.queued, ...a.retrying, ...a.sleeping]) expect((await jobRow(id)).queue).toBe("elsewhere");
  });

  it("narrows to the filter's states and its other fields (kind, tenant, payload)", async () => {
    const dead = await jobsIn(conveyor, "dead", 4, { queue: "a" });
    const retrying = await jobsIn(conveyor, "retrying", 4, { queue: "a" });
    const otherKind = await jobsIn(conveyor, "dead", 2, { queue: "a", kind: "other" });
    const otherTenant = await jobsIn(conveyor, "dead", 2, { queue: "a", tenant: "acme" });
    const before = await snapshot(conveyor);
    const ended = await act({ action: "retry", filter: { status: "dead", kind: "item", tenant: "default", payload: { n: 1 } } });
    expect(ended).toMatchObject({ tenant: "default", touched: 1, total: 1 });
    expect(ended.filter).toEqual({ status: "dead", kind: "item", tenant: "default", payload: { n: 1 } });
    const [touched] = changedIds(before, await snapshot(conveyor));
    expect(dead).toContain(touched);
    expect((await jobRow(touched!)).payload).toEqual({ n: 1 });
    for (const untouched of [...retrying, ...otherKind, ...otherTenant]) expect((await jobRow(untouched)).status).not.toBe("queued");
  });
});

describe("batches, progress and ends", () => {
  it("walks the jobs in batches, reporting progress after each, to the end", async () => {
    tune(conveyor, { batchSize: 7 });
    const dead = await jobsIn(conveyor, "dead", 50, { queue: "a" });
    const started = await conveyor.bulkActions.start({ action: "retry", filter: { status: "dead" }, requestedBy: "ops-runbook" });
    expect(started).toMatchObject({ status: "running", total: 50, touched: 0, requestedBy: "ops-runbook", finishedAt: null });
    const seen: BulkAction[] = [];
    const ended = await conveyor.bulkActions.run(started.id, { onProgress: (operation) => seen.push(operation) });
    expect(ended).toMatchObject({ status: "succeeded", touched: 50, total: 50 });
    expect(ended.finishedAt).toBeInstanceOf(Date);
    // 50 jobs in batches of 7: 8 batches (the last short), each reported.
    expect(seen.length).toBeGreaterThanOrEqual(7);
    const counts = seen.map((operation) => operation.touched);
    expect(counts).toEqual([...counts].sort((x, y) => x - y));
    expect(counts.at(-1)).toBe(50);
    expect(seen.slice(0, -1).every((operation) => operation.status === "running")).toBe(true);
    expect(await countRows(conveyor, "jobs", "id = ANY($1) AND status = 'queued'", [dead])).toBe(50);
    expect(await conveyor.bulkActions.get(started.id)).toEqual(ended);
  });

  it("a cancel midway ends the operation cancelled, keeping what it touched", async () => {
    tune(conveyor, { batchSize: 5, pauseMs: 150 });
    await jobsIn(conveyor, "queued", 40, { queue: "a" });
    const started = await conveyor.bulkActions.start({ action: "set_priority", filter: { queue: "a" }, priority: 9 });
    const seen: BulkAction[] = [];
    const running = conveyor.bulkActions.run(started.id, { onProgress: (operation) => seen.push(operation) });
    await waitFor("a first batch", () => seen.length > 0);
    const asked = await conveyor.bulkActions.cancel(started.id);
    expect(asked).toMatchObject({ status: "running", cancelRequested: true });
    const ended = await running;
    expect(ended).toMatchObject({ status: "cancelled", cancelRequested: true });
    expect(ended.touched).toBeGreaterThan(0);
    expect(ended.touched).toBeLessThan(40);
    expect(await countRows(conveyor, "jobs", "priority = 9")).toBe(ended.touched);
    await expect(conveyor.bulkActions.cancel(started.id)).rejects.toThrow(ConflictError);
  });

  it("running the same action twice touches nothing the second time", async () => {
    await jobsIn(conveyor, "dead", 10);
    await jobsIn(conveyor, "queued", 10);
    for (const input of [
      { action: "retry", filter: { kind: "item" } },
      { action: "cancel", filter: { kind: "item" } },
      { action: "set_priority", filter: { kind: "item" }, priority: 3 },
      { action: "move", filter: { kind: "item" }, queue: "q2" },
      { action: "purge", filter: { kind: "item" } },
    ] as const) {
      await jobsIn(conveyor, "dead", 3);
      await jobsIn(conveyor, "queued", 3);
      await jobsIn(conveyor, "running", 2);
      const first = await act(input);
      expect(first.touched, input.action).toBeGreaterThan(0);
      const before = await snapshot(conveyor);
      const second = await act(input);
      expect(second, input.action).toMatchObject({ status: "succeeded", touched: 0, total: 0 });
      expect(changedIds(before, await snapshot(conveyor)), input.action).toEqual([]);
    }
  });

  it("an operation that matches nothing ends at once, recorded", async () => {
    const ended = await act({ action: "purge", filter: { queue: "nowhere" } });
    expect(ended).toMatchObject({ status: "succeeded", total: 0, touched: 0 });
    expect((await conveyor.bulkActions.list()).items.map((operation) => operation.id)).toContain(ended.id);
  });

  it("lists operations newest first, a page at a time", async () => {
    const made: string[] = [];
    for (let n = 0; n < 5; n++) made.push((await act({ action: "purge", filter: { queue: `q${n}` } })).id);
    const first = await conveyor.bulkActions.list({ limit: 3 });
    expect(first.items.map((operation) => operation.id)).toEqual(made.slice(-3).reverse());
    const second = await conveyor.bulkActions.list({ limit: 3, cursor: first.nextCursor });
    expect(second.items.map((operation) => operation.id)).toEqual(made.slice(0, 2).reverse());
    expect(second.nextCursor).toBeNull();
  });
});

describe("an operation whose process died", () => {
  it("is taken over from its cursor and finished exactly once; the old owner's next batch writes nothing", async () => {
    tune(conveyor, { batchSize: 5, pauseMs: 1_500 });
    const dead = await jobsIn(conveyor, "dead", 30);
    const first = await createTestConveyor({ jobs, logger: silent, schema: t.schema });
    const second = await createTestConveyor({ jobs, logger: silent, schema: t.schema });
    try {
      tune(first.conveyor, { batchSize: 5, pauseMs: 1_500 });
      const started = await first.conveyor.bulkActions.start({ action: "retry", filter: { status: "dead" } });
      const firstSeen: BulkAction[] = [];
      const firstRun = first.conveyor.bulkActions.run(started.id, { onProgress: (operation) => firstSeen.push(operation) });
      await waitFor("the first batch", () => firstSeen.length === 1);
      // The owner stalls past its lease (as a process that died would).
      await sql(conveyor, "UPDATE {{schema}}.bulk_actions SET lease_expires_at = now() - interval '1 second' WHERE id = $1", [started.id]);
      // Two processes sweep at once: one takes it.
      tune(second.conveyor, { batchSize: 5, pauseMs: 0 });
      tune(conveyor, { batchSize: 5, pauseMs: 0 });
      const [a, b] = await Promise.all([second.conveyor.bulkActions.resume(), conveyor.bulkActions.resume()]);
      expect(a.length + b.length).toBe(1);
      const taker = a.length === 1 ? second.conveyor : conveyor;
      const ended = await taker.bulkActions.run(started.id);
      expect(ended).toMatchObject({ status: "succeeded", touched: 30, total: 30 });
      // The first owner wakes, finds the operation no longer its own, and stops having written nothing more.
      const firstEnded = await firstRun;
      expect(firstSeen).toHaveLength(1);
      expect(firstEnded).toMatchObject({ status: "succeeded", touched: 30 });
      expect(await countRows(conveyor, "jobs", "id = ANY($1) AND status = 'queued' AND attempts = 0", [dead])).toBe(30);
    } finally {
      await first.cleanup();
      await second.cleanup();
    }
  });

  it("is let go of at close(), and resumed by another process at once", async () => {
    await jobsIn(conveyor, "queued", 20);
    const first = await createTestConveyor({ jobs, logger: silent, schema: t.schema });
    try {
      tune(first.conveyor, { batchSize: 5, pauseMs: 60_000 });
      const started = await first.conveyor.bulkActions.start({ action: "set_priority", filter: { kind: "item" }, priority: 4 });
      await waitFor("the first batch", async () => (await conveyor.bulkActions.get(started.id))!.touched === 5);
      await first.cleanup(); // close(): the walk stops between two batches
      tune(conveyor, { batchSize: 5, pauseMs: 0 });
      const [resumed] = await conveyor.bulkActions.resume();
      expect(resumed).toMatchObject({ id: started.id, status: "running", touched: 5 });
      expect(await conveyor.bulkActions.run(started.id)).toMatchObject({ status: "succeeded", touched: 20 });
    } finally {
      await first.cleanup();
    }
  });

  it("runBulkAction takes over one whose lease lapsed, and a cancel ends one nobody runs at once", async () => {
    await jobsIn(conveyor, "queued", 12);
    const orphan = await conveyor.bulkActions.start({ action: "move", filter: { kind: "item" }, queue: "q9" });
    await conveyor.bulkActions.run(orphan.id);
    // An operation left running by a process that died before its first batch.
    const ids = await jobsIn(conveyor, "queued", 6);
    await sql(
      conveyor,
      `INSERT INTO {{schema}}.bulk_actions (id, tenant, action, filter, priority, status, total, owner, lease_expires_at, states)
       VALUES ('01900000-0000-7000-8000-000000000001', NULL, 'set_priority', '{"id": "${ids[0]!.slice(0, 8)}"}', 2, 'running', 1, 'gone', now() - interval '1 minute', '{queued}'),
              ('01900000-0000-7000-8000-000000000002', NULL, 'purge', '{"queue": "x"}', NULL, 'running', 0, 'gone', now() - interval '1 minute', '{}')`,
    );
    expect(await conveyor.bulkActions.run("01900000-0000-7000-8000-000000000001")).toMatchObject({ status: "succeeded" });
    expect(await conveyor.bulkActions.cancel("01900000-0000-7000-8000-000000000002")).toMatchObject({ status: "cancelled", touched: 0 });
    await expect(conveyor.bulkActions.run("01900000-0000-7000-8000-00000000000f")).rejects.toThrow(NotFoundError);
  });
});

describe("tenant scope", () => {
  it("a tenant-scoped caller acts on, sees and cancels only its own tenant's", async () => {
    const acme = await jobsIn(conveyor, "queued", 4, { tenant: "acme" });
    const globex = await jobsIn(conveyor, "queued", 4, { tenant: "globex" });
    await expect(conveyor.bulkActions.start({ action: "cancel", filter: { tenant: "globex", kind: "item" } }, { tenant: "acme" })).rejects.toMatchObject({
      issues: [{ path: "filter.tenant" }],
    });
    const ended = await act({ action: "cancel", filter: { kind: "item" } }, { tenant: "acme" });
    expect(ended).toMatchObject({ tenant: "acme", touched: 4 });
    expect(await countRows(conveyor, "jobs", "id = ANY($1) AND status = 'cancelled'", [acme])).toBe(4);
    expect(await countRows(conveyor, "jobs", "id = ANY($1) AND status = 'queued'", [globex])).toBe(4);
    expect(await conveyor.bulkActions.get(ended.id, { tenant: "globex" })).toBeNull();
    expect(await conveyor.bulkActions.get(ended.id, { tenant: "acme" })).toMatchObject({ id: ended.id });
    expect((await conveyor.bulkActions.list({ tenant: "globex" })).items).toEqual([]);
    expect((await conveyor.bulkActions.list({ tenant: "acme" })).items.map((operation) => operation.id)).toEqual([ended.id]);
    // An admin operation over every tenant is not a tenant's to see.
    const all = await act({ action: "purge", filter: { queue: "nowhere" } });
    expect(all.tenant).toBeNull();
    expect(await conveyor.bulkActions.get(all.id, { tenant: "acme" })).toBeNull();
    await expect(conveyor.bulkActions.cancel(ended.id, { tenant: "globex" })).rejects.toThrow(NotFoundError);
  });
});

describe("bad input", () => {
  it("is refused naming the field, and nothing is stored or changed", async () => {
    await jobsIn(conveyor, "dead", 3);
    await jobsIn(conveyor, "queued", 3);
    const before = await snapshot(conveyor);
    const cases: Array<[unknown, string, RegExp]> = [
      [{ action: "requeue", filter: { status: "dead" } }, "action", /must be one of retry, cancel, purge, set_priority, move/],
      [{ action: "retry", filter: { statuz: "dead" } }, "filter.statuz", /is not a job filter field/],
      [{ action: "retry", filter: { status: "deadd" } }, "filter.status", /must be one of/],
      [{ action: "retry", filter: {} }, "filter", /covers every job of every tenant.*all: true/],
      [{ action: "cancel", filter: { tenant: "acme" } }, "filter", /covers every job of tenant "acme"/],
      [{ action: "retry" }, "filter", /is required/],
      [{ action: "set_priority", filter: { kind: "item" }, priority: 1001 }, "priority", /from -1000 to 1000/],
      [{ action: "set_priority", filter: { kind: "item" }, priority: 1.5 }, "priority", /integer/],
      [{ action: "set_priority", filter: { kind: "item" } }, "priority", /is required for set_priority/],
      [{ action: "retry", filter: { kind: "item" }, priority: 1 }, "priority", /is only for set_priority/],
      [{ action: "move", filter: { kind: "item" }, queue: "bad queue!" }, "queue", /letters, digits/],
      [{ action: "move", filter: { kind: "item" } }, "queue", /is required for move/],
      [{ action: "purge", filter: { kind: "item" }, queue: "q" }, "queue", /is only for move/],
      [{ action: "purge", filter: { status: "queued" } }, "filter.status", /acts on succeeded, cancelled, dead jobs only/],
      [{ action: "retry", filter: { kind: "item" }, all: "yes" }, "all", /boolean/],
      [{ action: "retry", filter: { kind: "item" }, prority: 3 }, "prority", /is not a bulk action field/],
      [{ action: "retry", filter: { kind: "item" }, requestedBy: "" }, "requestedBy", /printable/],
    ];
    for (const [input, path, message] of cases) {
      const error = await conveyor.bulkActions.start(input as never).catch((e: unknown) => e);
      expect(error, JSON.stringify(input)).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).issues[0]?.path, JSON.stringify(input)).toBe(path);
      expect((error as ValidationError).message, JSON.stringify(input)).toMatch(message);
    }
    expect(await countRows(conveyor, "bulk_actions")).toBe(0);
    expect(changedIds(before, await snapshot(conveyor))).toEqual([]);
    // An empty filter with all: true is taken.
    expect(await act({ action: "retry", filter: {}, all: true })).toMatchObject({ status: "succeeded", touched: 3 });
  });
});

describe("flows", () => {
  it("cancelling a parent releases its dependents by their policies; cancelling a flow's members ends it consistently", async () => {
    const flow = await conveyor.flows.enqueue({
      jobs: {
        top: flowJob(parent, {}),
        failing: flowJob(child, {}, { dependsOn: ["top"] }),
        cancelling: flowJob(child, {}, { dependsOn: [{ node: "top", onFailure: "cancel" }] }),
        anyway: flowJob(child, {}, { dependsOn: ["top"], onDependencyFailure: "run" }),
      },
    });
    const ended = await act({ action: "cancel", filter: { kind: "parent" } });
    expect(ended.touched).toBe(1);
    const status = async (node: string) => (await jobRow(flow.jobs[node]!.id)).status;
    expect(await status("top")).toBe("cancelled");
    expect(await status("failing")).toBe("dead");
    expect(await jobRow(flow.jobs.failing!.id)).toMatchObject({ dead_letter_id: expect.any(String), dead_reason: "dependency_failed" });
    expect(await status("cancelling")).toBe("cancelled");
    expect(await status("anyway")).toBe("queued");

    // A whole flow at once, several batches: parents and children in the same transactions.
    tune(conveyor, { batchSize: 3 });
    const whole = await conveyor.flows.enqueue({
      jobs: Object.fromEntries([
        ["root", flowJob(parent, {})],
        ...Array.from({ length: 8 }, (_, n) => [`c${n}`, flowJob(child, {}, { dependsOn: ["root"] })]),
      ]),
    });
    const all = await act({ action: "cancel", filter: { kind: "child" } });
    expect(all.touched).toBe(8 + 1); // and "anyway" from the first flow, queued by then
    expect(await status("anyway")).toBe("cancelled");
    for (const [node, job] of Object.entries(whole.jobs)) {
      expect((await jobRow(job.id)).status, node).toBe(node === "root" ? "queued" : "cancelled");
    }
    // Retrying the dead child of the first flow requeues it as a dead-letter requeue would.
    expect(await act({ action: "retry", filter: { kind: "child", status: "dead" } })).toMatchObject({ touched: 1 });
    expect(await status("failing")).toBe("queued");
    expect(await countRows(conveyor, "job_dependency_state", "job_id = $1", [flow.jobs.failing!.id])).toBe(0);
  });
});

describe("workers completing jobs while a cancel runs", () => {
  it("end consistent: no job both succeeded and cancelled", async () => {
    tune(conveyor, { batchSize: 50, pauseMs: 5 });
    await conveyor.enqueueMany(Array.from({ length: 1_500 }, (_, n) => ({ job: brief, payload: { n } })));
    const workers = [conveyor.worker({ concurrency: 8, pollIntervalMs: 50 }), conveyor.worker({ concurrency: 8, pollIntervalMs: 50 })];
    try {
      for (const worker of workers) await worker.start();
      await waitFor("some jobs done", async () => (await countRows(conveyor, "jobs", "status = 'succeeded'")) > 100);
      const ended = await act({ action: "cancel", filter: { kind: "brief" } });
      expect(ended.status).toBe("succeeded");
      await waitFor("every job ended", async () => (await countRows(conveyor, "jobs", "finished_at IS NULL")) === 0, 30_000);
    } finally {
      await Promise.all(workers.map((worker) => worker.stop()));
    }
    const { rows } = await sql(
      conveyor,
      `SELECT j.status, count(*)::int AS jobs,
              count(*) FILTER (WHERE EXISTS (SELECT 1 FROM {{schema}}.job_attempts AS e WHERE e.job_id = j.id AND e.outcome = 'succeeded'))::int AS with_success
       FROM {{schema}}.jobs AS j GROUP BY j.status ORDER BY j.status`,
    );
    const byStatus = Object.fromEntries(rows.map((row) => [row.status, row]));
    expect(Object.keys(byStatus).sort()).toEqual(["cancelled", "succeeded"]);
    expect(byStatus.cancelled.jobs).toBeGreaterThan(0);
    expect(byStatus.cancelled.with_success).toBe(0);
    expect(byStatus.succeeded.with_success).toBe(byStatus.succeeded.jobs);
  });
});

describe("the walk's plans", () => {
  it("reads dead jobs through jobs_dead_idx in id order, and other states one primary-key window at a time", async () => {
    // 20,000 finished jobs, 2,000 queued and 500 dead around them.
    await sql(
      conveyor,
      `INSERT INTO {{schema}}.jobs (id, tenant, queue, kind, payload, status, attempts, max_attempts, started_at, finished_at)
       SELECT {{schema}}.uuid_v7(), 'default', 'deep', 'item', '{"n":1}', 'succeeded', 1, 3, now(), now() FROM generate_series(1, 20000)`,
    );
    await jobsIn(conveyor, "queued", 2_000, { queue: "deep" });
    const dead = await jobsIn(conveyor, "dead", 500, { queue: "deep" });
    const schema = t.schema;
    const explain = async (statement: { text: string; values: unknown[] }) => {
      const { rows } = await conveyor.pool.query(`EXPLAIN (FORMAT JSON) ${statement.text}`, statement.values);
      return asOneJobsTable(conveyor.pool, scans(rows[0]["QUERY PLAN"][0].Plan), schema);
    };
    const plan = (action: BulkBatchPlan["action"], states: BulkBatchPlan["states"], filter = {}): BulkBatchPlan => ({ action, filter, states, priority: 1, queue: "q" });
    for (const stats of ["before ANALYZE", "after ANALYZE"]) {
      if (stats === "after ANALYZE") await sql(conveyor, "ANALYZE {{schema}}.jobs");
      for (const [what, walk] of [
        ["retry dead", plan("retry", ["dead"])],
        ["purge dead in a queue", plan("purge", ["dead"], { queue: "deep" })],
      ] as const) {
        for (const [after, upTo] of [[BEFORE_EVERY_ID, null], [dead[250]!, dead[400]!]] as const) {
          const nodes = await explain(bulkActionCandidates(schema, walk, after, upTo, 100));
          const label = `${what}, ${upTo ? "midway" : "from the start"}, ${stats}: ${JSON.stringify(nodes)}`;
          // Dead jobs only: their partition, through its primary key (id order), its index by queue, or
          // read whole while the planner knows no better (before ANALYZE), which is reading dead jobs alone.
          expect(nodes.map((node) => node.Partition), label).toEqual(["jobs_dead"]);
          expect(nodes.map((node) => node["Index Name"] ?? "(whole)"), label).toEqual([expect.stringMatching(/^(jobs_dead_pkey|jobs_dead_by_queue_idx|\(whole\))$/)]);
        }
      }
      // Queued jobs have partial indexes, none in id order: the walk reads one window of the primary key.
      for (const [what, walk] of [
        ["cancel in a queue", plan("cancel", ["queued", "retrying", "running"], { queue: "deep" })],
        ["retry dead and retrying", plan("retry", ["dead", "retrying"])],
        ["move a kind", plan("move", ["waiting", "queued", "retrying"], { kind: "item" })],
      ] as const) {
        const nodes = await explain(bulkActionCandidates(schema, walk, dead[100]!, dead[110]!, 100));
        const label = `${what}, ${stats}: ${JSON.stringify(nodes)}`;
        // Each state's partition is read one window of ids at a time: every read of jobs is bounded by the window,
        // through the partition's id index (alone, or with another in a bitmap).
        const reads = nodes.filter((node) => node["Relation Name"] === "jobs");
        expect(reads.length, label).toBeGreaterThan(0);
        for (const read of reads) expect(read["Index Cond"] ?? read["Recheck Cond"], label).toMatch(/id > .*id <= /);
        expect(nodes.filter((node) => node["Node Type"] === "Seq Scan"), label).toEqual([]);
      }
      const apply = bulkActionApply(schema, plan("retry", ["dead"]), dead.slice(0, 100), uuidv7());
      const nodes = await explain(apply);
      // The planner may read the dead jobs' partition whole to find 100 of its 500 rows: dead jobs only, the cheapest
      // way at this size. No other state's partition is read but by key.
      const whole = nodes.filter((node) => node["Node Type"] === "Seq Scan" && node["Relation Name"] === "jobs");
      expect(whole.filter((node) => node.Partition !== "jobs_dead"), JSON.stringify(nodes)).toEqual([]);
    }
    // And the walk itself, through the library.
    tune(conveyor, { batchSize: 100 });
    expect(await act({ action: "retry", filter: { status: "dead" } })).toMatchObject({ touched: 500, total: 500 });
  });

  it("walks sparse jobs across many windows, between the first and last that matched at the start", async () => {
    tune(conveyor, { batchSize: 4, windowRows: 10 });
    const spread: string[] = [];
    for (let n = 0; n < 6; n++) {
      await jobsIn(conveyor, "succeeded", 15);
      spread.push(...(await jobsIn(conveyor, "queued", 2)));
      await jobsIn(conveyor, "retrying", 1, { queue: "elsewhere" });
    }
    await jobsIn(conveyor, "succeeded", 15);
    const seen: BulkAction[] = [];
    const started = await conveyor.bulkActions.start({ action: "cancel", filter: { kind: "item", queue: "default" } });
    expect(started.total).toBe(12);
    // Jobs enqueued after the start lie past the walk's end.
    const later = await jobsIn(conveyor, "queued", 3);
    const ended = await conveyor.bulkActions.run(started.id, { onProgress: (operation) => seen.push(operation) });
    expect(ended).toMatchObject({ status: "succeeded", touched: 12 });
    expect(seen.length).toBeGreaterThan(5); // many windows, most without a match
    expect(await countRows(conveyor, "jobs", "id = ANY($1) AND status = 'cancelled'", [spread])).toBe(12);
    expect(await countRows(conveyor, "jobs", "id = ANY($1) AND status = 'queued'", [later])).toBe(3);
    expect(await countRows(conveyor, "jobs", "status = 'retrying'")).toBe(6);
    // States with no matching job at the start are not walked.
    const { rows } = await sql(conveyor, "SELECT states FROM {{schema}}.bulk_actions WHERE id = $1", [started.id]);
    expect(rows[0].states).toEqual(["queued"]);
  });
});

it("a closed client starts no bulk action", async () => {
  const closing = await createTestConveyor({ jobs, logger: silent, schema: t.schema });
  await closing.cleanup();
  await expect(closing.conveyor.bulkActions.start({ action: "purge", filter: { kind: "item" } })).rejects.toThrow(/closed/);
  expect(conveyor.bulkActions.owner).toMatch(/:\d+:/);
});
