import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { ConfigError, Conveyor, defineJob, NotFoundError, ValidationError, type Worker } from "../packages/core/src/index.js";
import { workerTestSignals } from "../packages/core/src/worker/test-signals.js";
import { createTestConveyor, dbOf, testDatabaseUrl, type TestConveyor } from "./helpers/database.js";
import { drained, silent, sql, statusCounts } from "./worker/support.js";
import { waitFor } from "./helpers/wait-for.js";

// Queue limits are enforced in the database, so these tests run 8 workers on
// 8 separate clients (8 pools), as 8 processes would, all on one schema.

const WORKERS = 8;

/** Handlers running right now and the most seen at once, per queue. */
const live = new Map<string, { now: number; max: number }>();

const slow = defineJob({
  kind: "slow",
  schema: z.object({ ms: z.number() }),
  handler: async ({ payload, job }) => {
    const counter = live.get(job.queue) ?? { now: 0, max: 0 };
    live.set(job.queue, counter);
    counter.now += 1;
    counter.max = Math.max(counter.max, counter.now);
    try {
      await new Promise((resolve) => setTimeout(resolve, payload.ms));
    } finally {
      counter.now -= 1;
    }
  },
});
const jobs = [slow];

let test: TestConveyor;
let clients: Conveyor[] = [];

beforeAll(async () => {
  test = await createTestConveyor({ jobs, logger: silent });
  clients = Array.from(
    { length: WORKERS },
    () => new Conveyor({ connectionString: testDatabaseUrl(), schema: test.schema, jobs, logger: silent, poolSize: 3 }),
  );
});

afterAll(async () => {
  await Promise.all(clients.map((client) => client.close()));
  await test?.cleanup();
});

/**
 * One worker per client, all started; stop them with `stopAll`. With `idle`,
 * returns once each has ended a claim round and sleeps with no wake-up
 * pending (its test signal `idle`): each has looked for work and taken what
 * it may.
 */
async function startWorkers(options: Parameters<Conveyor["worker"]>[0], { idle = false } = {}): Promise<Worker[]> {
  const workers = clients.map((client) => client.worker({ pollIntervalMs: 50, ...options }));
  const loops = idle ? workers.map((worker) => workerTestSignals(worker).worker) : [];
  await Promise.all(workers.map((worker) => worker.start()));
  await Promise.all(loops.map((loop) => loop.idle.wait()));
  return workers;
}

const stopAll = (workers: Worker[]) => Promise.all(workers.map((worker) => worker.stop({ graceMs: 5_000 })));

/** Executions of one queue's jobs, running ones included, start and end in microseconds since the epoch. */
async function executionsOf(queue: string): Promise<Array<{ start: number; end: number | null }>> {
  const { rows } = await sql(
    test.conveyor,
    `SELECT (extract(epoch FROM e.started_at) * 1000000)::int8 AS start,
            (extract(epoch FROM e.finished_at) * 1000000)::int8 AS end
     FROM {{schema}}.job_attempts AS e JOIN {{schema}}.jobs AS j ON j.id = e.job_id
     WHERE j.queue = $1 ORDER BY e.started_at`,
    [queue],
  );
  return rows as Array<{ start: number; end: number | null }>;
}

describe("queue concurrency limit", () => {
  it("never runs more than the cap at once across 8 competing workers, and finishes every job", async () => {
    const queue = "capped";
    await test.conveyor.queues.setLimits(queue, { concurrency: 3 });
    await test.conveyor.enqueueMany(Array.from({ length: 40 }, () => ({ job: slow, payload: { ms: 60 }, queue })));
    const workers = await startWorkers({ concurrency: 5 });
    try {
      await waitFor("all capped jobs to finish", () => drained(test.conveyor), 60_000);
    } finally {
      await stopAll(workers);
    }
    expect(await statusCounts(test.conveyor)).toEqual({ succeeded: 40 });
    // In the handlers: the shared counter.
    expect(live.get(queue)!.max).toBeLessThanOrEqual(3);
    expect(live.get(queue)!.max).toBeGreaterThanOrEqual(2); // the workers did compete
    // In the database: at each start, attempts begun earlier and not yet finished, plus itself.
    const executions = await executionsOf(queue);
    expect(executions).toHaveLength(40);
    const overlaps = executions.map((e) => executions.filter((o) => o.start <= e.start && (o.end === null || o.end > e.start)).length);
    expect(Math.max(...overlaps)).toBeLessThanOrEqual(3);
    // Every execution came from one of the 8 workers, and more than one worker took part.
    const { rows } = await sql(test.conveyor, `SELECT count(DISTINCT worker_id)::int AS n FROM {{schema}}.job_attempts`);
    expect(rows[0].n).toBeGreaterThan(1);
  });
});

describe("queue rate limit", () => {
  it("starts at most N jobs per window across 8 competing workers", async () => {
    const queue = "rated";
    const count = 5;
    const intervalMs = 800;
    await test.conveyor.queues.setLimits(queue, { rateLimit: { count, intervalMs } });
    await test.conveyor.enqueueMany(Array.from({ length: 20 }, () => ({ job: slow, payload: { ms: 1 }, queue })));
    const workers = await startWorkers({ concurrency: 10 });
    try {
      await waitFor("all rated jobs to finish", async () => (await executionsOf(queue)).filter((e) => e.end !== null).length === 20, 60_000);
    } finally {
      await stopAll(workers);
    }
    // Rebuild the fixed windows from the recorded starts: a window opens at the
    // first start at or after the previous window's end, as the claim opens it.
    const starts = (await executionsOf(queue)).map((e) => e.start);
    const windows: number[][] = [];
    for (const start of starts) {
      const current = windows.at(-1);
      if (current && start < current[0]! + intervalMs * 1000) current.push(start);
      else windows.push([start]);
    }
    for (const window of windows) expect(window.length).toBeLessThanOrEqual(count);
    // 20 jobs at 5 per window need at least 4 windows, so 3 whole intervals.
    expect(windows.length).toBeGreaterThanOrEqual(4);
    expect(starts.at(-1)! - starts[0]!).toBeGreaterThanOrEqual(3 * intervalMs * 1000);
  });
});

describe("pause and resume", () => {
  it("keeps a paused queue's jobs queued, and resume wakes workers at once (no poll)", async () => {
    const queue = "pausable";
    await test.conveyor.queues.pause(queue);
    const enqueued = await test.conveyor.enqueueMany(Array.from({ length: 6 }, () => ({ job: slow, payload: { ms: 1 }, queue })));
    // A poll interval far beyond the test: only the resume notification can wake them.
    const workers = await startWorkers({ concurrency: 2, pollIntervalMs: 120_000 }, { idle: true });
    try {
      const { rows } = await sql(test.conveyor, `SELECT status, count(*)::int AS n FROM {{schema}}.jobs WHERE queue = $1 GROUP BY status`, [queue]);
      expect(rows).toEqual([{ status: "queued", n: 6 }]);
      const settings = await test.conveyor.queues.resume(queue);
      expect(settings.paused).toBe(false);
      await waitFor(
        "resumed jobs to finish",
        async () => (await Promise.all(enqueued.map((job) => test.conveyor.getJob(job.id)))).every((job) => job?.status === "succeeded"),
        20_000,
      );
    } finally {
      await stopAll(workers);
    }
  });

  it("a paused queue with limits is not claimed by the limited claim either", async () => {
    const queue = "paused-capped";
    await test.conveyor.queues.setLimits(queue, { concurrency: 2 });
    await test.conveyor.queues.pause(queue);
    await test.conveyor.enqueueMany(Array.from({ length: 4 }, () => ({ job: slow, payload: { ms: 1 }, queue })));
    // A worker whose view of the limits predates the pause still sends the limited claim: it takes nothing.
    const request = { workerId: "stale-view", limit: 2, kinds: ["slow"], queues: [queue], leaseMs: 60_000 };
    expect(await dbOf(test.conveyor).limitedClaims.jobClaimFromLimitedQueue(queue, request)).toEqual([]);
    // Each worker's first claim waits for its view of the limits, read after the pause.
    const workers = await startWorkers({ concurrency: 2 }, { idle: true });
    try {
      const { rows } = await sql(test.conveyor, `SELECT count(*)::int AS n FROM {{schema}}.jobs WHERE queue = $1 AND status = 'queued'`, [queue]);
      expect(rows[0].n).toBe(4);
      await test.conveyor.queues.resume(queue);
      await waitFor("the capped queue to drain after resume", async () => {
        const { rows: left } = await sql(test.conveyor, `SELECT count(*)::int AS n FROM {{schema}}.jobs WHERE queue = $1 AND status <> 'succeeded'`, [queue]);
        return left[0].n === 0;
      });
    } finally {
      await stopAll(workers);
    }
  });
});

describe("queue settings", () => {
  it("deletes a queue's settings (made before its first job, or for a mistyped name); NotFoundError when none", async () => {
    await test.conveyor.queues.pause("never-used");
    await test.conveyor.queues.setLimits("never-used", { concurrency: 1 });
    expect((await test.conveyor.queues.listSettings()).map((s) => s.queue)).toContain("never-used");
    await test.conveyor.queues.deleteSettings("never-used");
    expect((await test.conveyor.queues.listSettings()).map((s) => s.queue)).not.toContain("never-used");
    const error = await test.conveyor.queues.deleteSettings("never-used").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(NotFoundError);
    expect((error as NotFoundError).message).toBe('queue "never-used" has no settings to delete');
  });

  it("lists what is set, keeps omitted fields and clears with null", async () => {
    await test.conveyor.queues.setLimits("settings", { concurrency: 4, rateLimit: { count: 10, intervalMs: 1_000 } });
    let settings = await test.conveyor.queues.setLimits("settings", { concurrency: null });
    expect(settings).toMatchObject({ queue: "settings", paused: false, concurrency: null, rateLimit: { count: 10, intervalMs: 1_000 } });
    settings = await test.conveyor.queues.setLimits("settings", { rateLimit: null });
    expect(settings).toMatchObject({ concurrency: null, rateLimit: null });
    const listed = await test.conveyor.queues.listSettings();
    expect(listed.find((s) => s.queue === "settings")).toMatchObject({ concurrency: null, rateLimit: null });
    expect(await test.conveyor.queues.setTenantLimits("acme", { concurrency: 2 })).toMatchObject({ tenant: "acme", concurrency: 2 });
    expect(await test.conveyor.queues.listTenantSettings()).toMatchObject([{ tenant: "acme", concurrency: 2 }]);
    await test.conveyor.queues.setTenantLimits("acme", { concurrency: null });
  });

  it("refuses bad input, naming the field", async () => {
    const refused = async (action: () => Promise<unknown>, path: string) => {
      const error = await action().then(
        () => null,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).issues[0]?.path).toBe(path);
      expect((error as Error).message).toContain(path);
    };
    const c = test.conveyor;
    await refused(() => c.queues.setLimits("q", { concurrency: 0 }), "concurrency");
    await refused(() => c.queues.setLimits("q", { concurrency: 1.5 }), "concurrency");
    await refused(() => c.queues.setLimits("q", { rateLimit: { count: 5 } as never }), "rateLimit.intervalMs");
    await refused(() => c.queues.setLimits("q", { rateLimit: { count: -1, intervalMs: 10 } }), "rateLimit.count");
    await refused(() => c.queues.setLimits("q", { rateLimit: { count: 1, intervalMs: 10 ** 12 } }), "rateLimit.intervalMs");
    await refused(() => c.queues.setLimits("q", { burst: 3 } as never), "burst");
    await refused(() => c.queues.setLimits("q", {}), "limits");
    await refused(() => c.queues.setLimits("bad queue!", { concurrency: 1 }), "queue");
    await refused(() => c.queues.pause(""), "queue");
    await refused(() => c.queues.deleteSettings("bad queue!"), "queue");
    await refused(() => c.queues.setTenantLimits("acme", { concurrency: 0 }), "concurrency");
    await refused(() => c.queues.setTenantLimits("", { concurrency: 1 }), "tenant");
    expect(() => c.worker({ fairness: "round-robin" as never })).toThrow(ConfigError);
    expect(() => c.worker({ fairness: "round-robin" as never })).toThrow(/worker\.fairness/);
    // Nothing was written for the refused calls.
    expect((await c.queues.listSettings()).map((s) => s.queue)).not.toContain("q");
  });
});
