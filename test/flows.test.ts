import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import {
  type Conveyor,
  defineJob,
  FlowIdempotencyConflictError,
  flowJob,
  PermanentError,
  ValidationError,
  type Worker,
} from "../packages/core/src/index.js";
import { createTestConveyor } from "./helpers/database.js";
import { silent, sql } from "./worker/support.js";
import { waitFor } from "./helpers/wait-for.js";

// Jobs whose handlers do what the payload says, and record what they saw.
const seen = new Map<string, unknown>();
const step = z.object({ name: z.string(), fail: z.boolean().optional(), value: z.number().optional() });

const charge = defineJob({
  kind: "flow.charge",
  schema: z.object({ orderId: z.string(), amount: z.number() }),
  maxAttempts: 1,
  handler: ({ payload }) => ({ chargeId: `ch_${payload.orderId}`, amount: payload.amount }),
});
const reserve = defineJob({
  kind: "flow.reserve",
  schema: z.object({ orderId: z.string(), sku: z.string() }),
  maxAttempts: 1,
  handler: async ({ payload }) => {
    await new Promise((resolve) => setTimeout(resolve, 100));
    return { reserved: payload.sku };
  },
});
const email = defineJob({ kind: "flow.email", schema: z.object({ orderId: z.string() }), maxAttempts: 1, handler: () => ({ sent: true }) });
const ship = defineJob({
  kind: "flow.ship",
  schema: z.object({ orderId: z.string() }),
  maxAttempts: 1,
  handler: async (ctx) => {
    const [charged] = await ctx.resultsOf(charge);
    // Typed by charge's handler: chargeId is a string.
    const chargeId: string = charged!.chargeId;
    seen.set(`ship:${ctx.payload.orderId}`, { chargeId, dependencies: await ctx.dependencies() });
    return { shipped: true };
  },
});
const task = defineJob({
  kind: "flow.task",
  schema: step,
  maxAttempts: 1,
  handler: async (ctx) => {
    if (ctx.payload.fail) throw new PermanentError(`${ctx.payload.name} failed`);
    seen.set(`deps:${ctx.payload.name}`, await ctx.dependencies());
    return ctx.payload.value ?? ctx.payload.name;
  },
});
/** Fails until `fixed` holds its name: a dead member that a requeue can bring back. */
const fixed = new Set<string>();
const flaky = defineJob({
  kind: "flow.flaky",
  schema: step,
  maxAttempts: 1,
  handler: (ctx) => {
    if (!fixed.has(ctx.payload.name)) throw new Error(`${ctx.payload.name} is broken`);
    return "fixed";
  },
});
const callback = defineJob({
  kind: "flow.callback",
  schema: z.object({ batch: z.string() }),
  maxAttempts: 1,
  handler: async (ctx) => {
    const summary = await ctx.dependencySummary();
    seen.set(`callback:${ctx.payload.batch}`, { ...summary, runs: ((seen.get(`callback:${ctx.payload.batch}`) as { runs?: number })?.runs ?? 0) + 1 });
    return summary;
  },
});
/** Waits until released by the test, so a flow can be cancelled while it runs. */
const held = new Set<string>();
const slow = defineJob({
  kind: "flow.slow",
  schema: step,
  maxAttempts: 1,
  handler: ({ payload, signal }) =>
    new Promise((resolve, reject) => {
      held.add(payload.name);
      signal.addEventListener("abort", () => reject(signal.reason));
    }),
});

describe("job dependencies, flows and batches", () => {
  let conveyor: Conveyor;
  let cleanup: () => Promise<void>;
  let worker: Worker;
  beforeAll(async () => {
    ({ conveyor, cleanup } = await createTestConveyor({ jobs: [charge, reserve, email, ship, task, flaky, callback, slow], logger: silent }));
    worker = conveyor.worker({ concurrency: 8, pollIntervalMs: 50, heartbeatMs: 200, logger: silent });
    await worker.start();
  });
  afterAll(async () => {
    await worker.stop({ graceMs: 0 });
    await cleanup();
  });

  const job = (id: string) => conveyor.getJob(id).then((found) => found!);
  const ended = (id: string) => waitFor(`job ${id} to end`, async () => {
    const found = await job(id);
    return ["succeeded", "dead", "cancelled"].includes(found.status) ? found : null;
  });

  it("runs an order pipeline: charge, reserve stock and email fan in to the shipment", async () => {
    const flow = await conveyor.flows.enqueue({
      name: "order 1001",
      jobs: {
        charge: flowJob(charge, { orderId: "1001", amount: 4200 }),
        reserve: flowJob(reserve, { orderId: "1001", sku: "BOOK-1" }),
        email: flowJob(email, { orderId: "1001" }),
        ship: flowJob(ship, { orderId: "1001" }, { dependsOn: ["charge", "reserve", "email"] }),
      },
    });
    expect(flow.created).toBe(true);
    expect(flow.jobs.ship!.status).toBe("waiting");
    expect(flow.jobs.charge!.status).toBe("queued");
    const shipped = await ended(flow.jobs.ship!.id);
    expect(shipped.status).toBe("succeeded");
    expect(seen.get("ship:1001")).toMatchObject({ chargeId: "ch_1001" });
    const dependencies = (seen.get("ship:1001") as { dependencies: Array<{ node: string; status: string; result: unknown }> }).dependencies;
    expect(dependencies.map((d) => [d.node, d.status]).sort()).toEqual([["charge", "succeeded"], ["email", "succeeded"], ["reserve", "succeeded"]]);
    expect(dependencies.find((d) => d.node === "reserve")!.result).toEqual({ reserved: "BOOK-1" });
    // The shipment's only attempt started after the last of its dependencies finished (executions, database clock).
    const { rows } = await sql(
      conveyor,
      `SELECT (SELECT min(started_at) FROM {{schema}}.job_attempts WHERE job_id = $1) AS started,
              (SELECT max(e.finished_at) FROM {{schema}}.job_attempts e JOIN {{schema}}.job_dependencies d ON d.depends_on = e.job_id
                WHERE d.job_id = $1 AND e.outcome = 'succeeded') AS last_parent,
              (SELECT count(*)::int FROM {{schema}}.job_attempts WHERE job_id = $1) AS runs`,
      [flow.jobs.ship!.id],
    );
    expect(rows[0].runs).toBe(1);
    expect(rows[0].started.getTime()).toBeGreaterThanOrEqual(rows[0].last_parent.getTime());
    const detail = await conveyor.flows.get(flow.id);
    expect(detail).toMatchObject({ id: flow.id, kind: "flow", name: "order 1001" });
    expect(detail!.jobs.find((j) => j.node === "ship")!.dependsOn.sort()).toEqual(
      [flow.jobs.charge!.id, flow.jobs.reserve!.id, flow.jobs.email!.id].sort(),
    );
    const links = await conveyor.flows.getJobDependencies(flow.jobs.ship!.id);
    expect(links).toMatchObject({ flowId: flow.id, node: "ship", counts: { pending: 0, failed: 0, blocking: 0 } });
    expect(links!.dependencies.map((d) => d.node).sort()).toEqual(["charge", "email", "reserve"]);
    const parent = await conveyor.flows.getJobDependencies(flow.jobs.charge!.id);
    expect(parent!.dependents.map((d) => d.node)).toEqual(["ship"]);
  });

  it("applies each policy when a dependency dies: fail (down the chain), cancel, run", async () => {
    const flow = await conveyor.flows.enqueue({
      jobs: {
        broken: { job: task, payload: { name: "broken", fail: true } },
        failing: { job: task, payload: { name: "failing" }, dependsOn: ["broken"] },
        after: { job: task, payload: { name: "after" }, dependsOn: ["failing"] },
        cancelled: { job: task, payload: { name: "cancelled" }, dependsOn: [{ node: "broken", onFailure: "cancel" }] },
        anyway: { job: task, payload: { name: "anyway" }, dependsOn: ["broken"], onDependencyFailure: "run" },
      },
    });
    const failing = await ended(flow.jobs.failing!.id);
    expect(failing.status).toBe("dead");
    expect(failing.attempts).toBe(0);
    expect(failing.lastError).toMatchObject({ name: "DependencyFailed", message: `dependency ${flow.jobs.broken!.id} (flow.task) ended dead` });
    const letter = (await conveyor.deadLetters.list({ kind: "flow.task" })).items.find((l) => l.jobId === flow.jobs.failing!.id);
    expect(letter).toMatchObject({ reason: "dependency_failed" });
    expect((await ended(flow.jobs.after!.id)).lastError).toMatchObject({ message: `dependency ${flow.jobs.failing!.id} (flow.task) ended dead` });
    expect((await ended(flow.jobs.cancelled!.id)).status).toBe("cancelled");
    expect((await ended(flow.jobs.anyway!.id)).status).toBe("succeeded");
    expect((seen.get("deps:anyway") as Array<{ status: string; error: { message: string } }>)[0]).toMatchObject({
      status: "dead",
      error: { message: "broken failed" },
    });
    for (const name of ["failing", "after", "cancelled"]) {
      const { rows } = await sql(conveyor, "SELECT count(*)::int AS n FROM {{schema}}.job_attempts WHERE job_id = $1", [flow.jobs[name]!.id]);
      expect(rows[0].n, name).toBe(0);
    }
  });

  it("ends a 2,000-job chain in one transaction when its first job dies", async () => {
    const jobs: Record<string, { job: typeof task; payload: { name: string; fail?: boolean }; dependsOn?: string[] }> = {};
    for (let i = 0; i < 2_000; i++) jobs[`c${i}`] = { job: task, payload: { name: `c${i}`, fail: i === 0 }, ...(i > 0 ? { dependsOn: [`c${i - 1}`] } : {}) };
    const flow = await conveyor.flows.enqueue({ jobs });
    await ended(flow.jobs.c0!.id);
    // The last link is dead as soon as the first is: the release walked the chain in the failing write.
    expect((await job(flow.jobs.c1999!.id)).status).toBe("dead");
    const { rows } = await sql(
      conveyor,
      `SELECT count(DISTINCT j.xmin::text)::int AS transactions, count(*)::int AS dead
         FROM {{schema}}.jobs j JOIN {{schema}}.flow_jobs m ON m.job_id = j.id WHERE m.flow_id = $1 AND j.status = 'dead'`,
      [flow.id],
    );
    expect(rows[0]).toEqual({ transactions: 1, dead: 2_000 });
  }, 60_000);

  it("refuses cycles, unknown names, and missing or foreign dependencies, writing nothing", async () => {
    const before = await sql(conveyor, "SELECT count(*)::int AS n FROM {{schema}}.jobs");
    const cycle = conveyor.flows.enqueue({
      jobs: {
        a: { job: task, payload: { name: "a" }, dependsOn: ["c"] },
        b: { job: task, payload: { name: "b" }, dependsOn: ["a"] },
        c: { job: task, payload: { name: "c" }, dependsOn: ["b"] },
        d: { job: task, payload: { name: "d" } },
      },
    });
    await expect(cycle).rejects.toThrow(ValidationError);
    await expect(cycle).rejects.toThrow(/the flow has a cycle: a → c → b → a/);
    await expect(conveyor.flows.enqueue({ jobs: { a: { job: task, payload: { name: "a" }, dependsOn: ["a"] } } })).rejects.toThrow(/cycle: a → a/);
    await expect(conveyor.flows.enqueue({ jobs: { a: { job: task, payload: { name: "a" }, dependsOn: ["nope"] } } })).rejects.toThrow(
      'jobs.a.dependsOn.0: no job named "nope" in this flow',
    );
    const missing = "01900000-0000-7000-8000-000000000000";
    await expect(conveyor.enqueue(task, { name: "x" }, { dependsOn: [missing] })).rejects.toThrow(`dependsOn: no job ${missing} in tenant "default"`);
    const foreign = await conveyor.enqueue(task, { name: "other tenant" }, { tenant: "acme", delayMs: 3_600_000 });
    await expect(conveyor.enqueue(task, { name: "x" }, { dependsOn: [foreign.id] })).rejects.toThrow(`no job ${foreign.id} in tenant "default"`);
    await expect(conveyor.enqueue(task, { name: "x" }, { dependsOn: [foreign.id], onDependencyFailure: "explode" as never })).rejects.toThrow(
      "onDependencyFailure must be one of fail, cancel, run",
    );
    await expect(conveyor.enqueue(task, { name: "x" }, { dependsOn: [foreign.id], unique: { key: "k" } })).rejects.toThrow(/unique cannot be combined/);
    await expect(conveyor.enqueueMany([{ job: task, payload: { name: "x" }, dependsOn: [foreign.id] } as never])).rejects.toThrow(/dependsOn is not taken by enqueueMany/);
    const after = await sql(conveyor, "SELECT count(*)::int AS n FROM {{schema}}.jobs");
    expect(after.rows[0].n).toBe(before.rows[0].n + 1); // only the foreign tenant's job
    await conveyor.cancel(foreign.id);
  });

  it("takes dependencies on existing jobs, settled at enqueue when they have already ended", async () => {
    const done = await conveyor.enqueue(task, { name: "done early" });
    await ended(done.id);
    const dead = await conveyor.enqueue(task, { name: "dead early", fail: true });
    await ended(dead.id);
    const afterDone = await conveyor.enqueue(task, { name: "after done" }, { dependsOn: [done.id] });
    expect(afterDone.status).toBe("queued");
    const afterDead = await conveyor.enqueue(task, { name: "after dead" }, { dependsOn: [dead.id] });
    expect(afterDead.status).toBe("dead");
    expect(afterDead.lastError).toMatchObject({ name: "DependencyFailed" });
    const anyway = await conveyor.enqueue(task, { name: "anyway early" }, { dependsOn: [{ jobId: dead.id, onFailure: "run" }, done.id] });
    expect(anyway.status).toBe("queued");
    expect((await ended(anyway.id)).status).toBe("succeeded");
    // An idempotency key answers the same request with the first job.
    const again = await conveyor.enqueue(task, { name: "after done" }, { dependsOn: [done.id], idempotencyKey: "dep-1" });
    const repeat = await conveyor.enqueue(task, { name: "after done" }, { dependsOn: [done.id], idempotencyKey: "dep-1" });
    expect(repeat).toMatchObject({ id: again.id, created: false });
  });

  it("enqueues a flow once per idempotency key, refuses another request under it, and joins the caller's transaction", async () => {
    const input = {
      idempotencyKey: "flow-key-1",
      jobs: { first: { job: task, payload: { name: "k1" }, delayMs: 3_600_000 }, second: { job: task, payload: { name: "k2" }, dependsOn: ["first"] } },
    };
    const one = await conveyor.flows.enqueue(input);
    const two = await conveyor.flows.enqueue(input);
    expect(two.created).toBe(false);
    expect(two.id).toBe(one.id);
    expect(two.jobs.second!.id).toBe(one.jobs.second!.id);
    await expect(conveyor.flows.enqueue({ ...input, jobs: { ...input.jobs, second: { ...input.jobs.second, payload: { name: "other" } } } })).rejects.toThrow(
      FlowIdempotencyConflictError,
    );
    const client = await conveyor.pool.connect();
    try {
      await client.query("BEGIN");
      const rolledBack = await conveyor.flows.enqueue({ tx: client, jobs: { only: { job: task, payload: { name: "rolled back" } } } });
      await client.query("ROLLBACK");
      expect(await conveyor.flows.get(rolledBack.id)).toBeNull();
      expect(await conveyor.getJob(rolledBack.jobs.only!.id)).toBeNull();
    } finally {
      client.release();
    }
    await conveyor.flows.cancel(one.id);
    // A flow's job takes a limit key like any enqueue.
    const keyed = await conveyor.flows.enqueue({ jobs: { a: { job: task, payload: { name: "keyed" }, limitKey: "host:a", delayMs: 3_600_000 } } });
    expect((await conveyor.getJob(keyed.jobs.a!.id))!.limitKey).toBe("host:a");
    await conveyor.flows.cancel(keyed.id);
  });

  it("fires a batch callback exactly once, with the counts and the failed members", async () => {
    const batch = await conveyor.flows.enqueueBatch({
      jobs: [
        { job: task, payload: { name: "m1" } },
        { job: task, payload: { name: "m2", fail: true } },
        { job: task, payload: { name: "m3" } },
      ],
      callback: { job: callback, payload: { batch: "b1" } },
    });
    expect(batch.callback.status).toBe("waiting");
    expect((await ended(batch.callback.id)).status).toBe("succeeded");
    expect(seen.get("callback:b1")).toEqual({
      total: 3,
      succeeded: 2,
      dead: 1,
      cancelled: 0,
      unfinished: 0,
      failedJobIds: [batch.jobs[1]!.id],
      runs: 1,
    });
    const onlyOnSuccess = await conveyor.flows.enqueueBatch({
      jobs: [{ job: task, payload: { name: "s1", fail: true } }, { job: task, payload: { name: "s2" } }],
      callback: { job: callback, payload: { batch: "b2" }, when: "succeeded" },
    });
    expect((await ended(onlyOnSuccess.callback.id)).status).toBe("cancelled");
    const onlyOnFailure = await conveyor.flows.enqueueBatch({
      jobs: [{ job: task, payload: { name: "f1" } }, { job: task, payload: { name: "f2" } }],
      callback: { job: callback, payload: { batch: "b3" }, when: "failed" },
    });
    const skipped = await ended(onlyOnFailure.callback.id);
    expect(skipped.status).toBe("cancelled");
    expect(skipped.lastError).toMatchObject({ name: "NoDependencyFailed" });
    expect(seen.has("callback:b2")).toBe(false);
    expect(seen.has("callback:b3")).toBe(false);
  });

  it("cancels a flow: what has not started at once, what runs through its signal", async () => {
    const flow = await conveyor.flows.enqueue({
      jobs: {
        running: { job: slow, payload: { name: "cancel-me" } },
        next: { job: task, payload: { name: "never" }, dependsOn: ["running"] },
        later: { job: task, payload: { name: "never either" }, delayMs: 3_600_000 },
      },
    });
    await waitFor("the slow job to run", () => held.has("cancel-me"));
    expect(await conveyor.flows.cancel(flow.id)).toEqual({ cancelled: 2, cancelRequested: 1 });
    expect((await ended(flow.jobs.running!.id)).status).toBe("cancelled");
    expect((await job(flow.jobs.next!.id)).status).toBe("cancelled");
    expect((await job(flow.jobs.later!.id)).status).toBe("cancelled");
    await expect(conveyor.flows.cancel(flow.id, { tenant: "acme" })).rejects.toThrow(/not found/);
  });

  it("re-arms what waited on a dead job when it is requeued", async () => {
    const flow = await conveyor.flows.enqueue({
      jobs: {
        parent: { job: flaky, payload: { name: "parent" } },
        child: { job: task, payload: { name: "child" }, dependsOn: ["parent"] },
        grandchild: { job: task, payload: { name: "grandchild" }, dependsOn: ["child"] },
        sibling: { job: task, payload: { name: "sibling" }, dependsOn: ["parent"], onDependencyFailure: "run" },
      },
    });
    expect((await ended(flow.jobs.grandchild!.id)).status).toBe("dead");
    expect((await ended(flow.jobs.sibling!.id)).status).toBe("succeeded");
    fixed.add("parent");
    const letter = (await conveyor.deadLetters.list({ kind: "flow.flaky" })).items.find((l) => l.jobId === flow.jobs.parent!.id)!;
    await conveyor.deadLetters.requeue(letter.id);
    expect((await ended(flow.jobs.grandchild!.id)).status).toBe("succeeded");
    expect((await job(flow.jobs.child!.id)).status).toBe("succeeded");
    // The sibling had already run: a requeue does not run it again.
    const { rows } = await sql(conveyor, "SELECT count(*)::int AS n FROM {{schema}}.job_attempts WHERE job_id = $1", [flow.jobs.sibling!.id]);
    expect(rows[0].n).toBe(1);
    const letters = (await conveyor.deadLetters.list({ kind: "flow.task" })).items.map((l) => l.jobId);
    expect(letters).not.toContain(flow.jobs.child!.id);
    expect(letters).not.toContain(flow.jobs.grandchild!.id);
  });

  it("releases a 2,000-job fan-in exactly once while many completions race", async () => {
    const jobs: Record<string, { job: typeof task; payload: { name: string }; dependsOn?: string[] }> = {};
    for (let i = 0; i < 2_000; i++) jobs[`p${i}`] = { job: task, payload: { name: `p${i}` } };
    jobs.sink = { job: task, payload: { name: "sink" }, dependsOn: Object.keys(jobs) };
    const second = conveyor.worker({ concurrency: 16, pollIntervalMs: 50, logger: silent });
    await second.start();
    try {
      const flow = await conveyor.flows.enqueue({ jobs });
      const sink = await waitFor("sink", async () => ((await job(flow.jobs.sink!.id)).status === "succeeded" ? true : null), 60_000);
      expect(sink).toBe(true);
      const { rows } = await sql(
        conveyor,
        `SELECT (SELECT count(*)::int FROM {{schema}}.job_attempts WHERE job_id = $1) AS runs,
                (SELECT min(started_at) FROM {{schema}}.job_attempts WHERE job_id = $1) AS started,
                (SELECT max(e.finished_at) FROM {{schema}}.job_attempts e JOIN {{schema}}.flow_jobs m ON m.job_id = e.job_id
                  WHERE m.flow_id = $2 AND e.job_id <> $1) AS last_parent`,
        [flow.jobs.sink!.id, flow.id],
      );
      expect(rows[0].runs).toBe(1);
      expect(rows[0].started.getTime()).toBeGreaterThanOrEqual(rows[0].last_parent.getTime());
    } finally {
      await second.stop({ graceMs: 0 });
    }
  }, 90_000);

  it("writes a 10,000-job flow in one call, and deletes its edges with its jobs", async () => {
    const jobs: Record<string, { job: typeof task; payload: { name: string }; dependsOn?: string[]; delayMs?: number }> = {};
    for (let i = 0; i < 10_000; i++) jobs[`n${i}`] = { job: task, payload: { name: `n${i}` }, delayMs: 3_600_000, ...(i > 0 ? { dependsOn: [`n${i - 1}`] } : {}) };
    const flow = await conveyor.flows.enqueue({ jobs });
    const { rows } = await sql(
      conveyor,
      `SELECT (SELECT count(*)::int FROM {{schema}}.flow_jobs WHERE flow_id = $1) AS members,
              (SELECT count(*)::int FROM {{schema}}.job_dependencies d JOIN {{schema}}.flow_jobs m ON m.job_id = d.job_id WHERE m.flow_id = $1) AS edges,
              (SELECT count(*)::int FROM {{schema}}.jobs j JOIN {{schema}}.flow_jobs m ON m.job_id = j.id WHERE m.flow_id = $1 AND j.status = 'waiting') AS waiting`,
      [flow.id],
    );
    expect(rows[0]).toEqual({ members: 10_000, edges: 9_999, waiting: 9_999 });
    await sql(conveyor, "DELETE FROM {{schema}}.jobs WHERE id = ANY($1::uuid[])", [Object.values(flow.jobs).map((j) => j.id)]);
    const left = await sql(
      conveyor,
      `SELECT (SELECT count(*)::int FROM {{schema}}.flow_jobs WHERE flow_id = $1) AS members,
              (SELECT count(*)::int FROM {{schema}}.job_dependencies WHERE job_id = ANY($2::uuid[]) OR depends_on = ANY($2::uuid[])) AS edges,
              (SELECT count(*)::int FROM {{schema}}.job_dependency_state WHERE job_id = ANY($2::uuid[])) AS states`,
      [flow.id, Object.values(flow.jobs).map((j) => j.id)],
    );
    expect(left.rows[0]).toEqual({ members: 0, edges: 0, states: 0 });
  }, 60_000);
});
