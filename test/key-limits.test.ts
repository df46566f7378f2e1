import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { ConflictError, Conveyor, defineJob, NotFoundError, ValidationError, type Worker } from "../packages/core/src/index.js";
import { createTestConveyor, testDatabaseUrl, type TestConveyor } from "./helpers/database.js";
import { KEYED_EXECUTIONS_SQL, type KeyedExecution, keyedExecutions, maxOverlapByKey, maxStartsPerWindow } from "./helpers/key-executions.js";
import { drained, silent, sql } from "./worker/support.js";
import { waitFor } from "./helpers/wait-for.js";

// Limits per key are enforced in the database, so these tests run 6 workers
// on 6 separate clients (6 pools), as 6 processes would, all on one schema.
// test/worker-processes/key-limits.test.ts runs 4 real processes.

const WORKERS = 6;

const slow = defineJob({
  kind: "slow",
  schema: z.object({ ms: z.number(), host: z.string().optional() }),
  limitKey: (payload) => payload.host ?? "none",
  handler: async ({ payload }) => {
    await new Promise((resolve) => setTimeout(resolve, payload.ms));
  },
});
/** Fails, or waits for its signal (cancel, shutdown), as its payload says. */
const controlled = defineJob({
  kind: "controlled",
  schema: z.object({ mode: z.enum(["fail", "wait"]) }),
  maxAttempts: 2,
  backoff: { baseMs: 60_000, capMs: 60_000, jitter: 0 },
  handler: async ({ payload, signal }) => {
    if (payload.mode === "fail") throw new Error("failed on purpose");
    await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
    signal.throwIfAborted();
  },
});
const jobs = [slow, controlled];

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

async function startWorkers(options: Parameters<Conveyor["worker"]>[0]): Promise<Worker[]> {
  const workers = clients.map((client) => client.worker({ pollIntervalMs: 50, ...options }));
  await Promise.all(workers.map((worker) => worker.start()));
  return workers;
}

const stopAll = (workers: Worker[]) => Promise.all(workers.map((worker) => worker.stop({ graceMs: 5_000 })));

/** Executions of one queue's jobs with their key. */
async function executionsOf(queue: string): Promise<KeyedExecution[]> {
  return keyedExecutions((await sql(test.conveyor, KEYED_EXECUTIONS_SQL, [queue])).rows);
}

describe("limit keys at enqueue", () => {
  it("stores the key given at enqueue, else the definition's, and refuses a bad one without storing anything", async () => {
    const queue = "enqueue-keys";
    const given = await test.conveyor.enqueue(slow, { ms: 1, host: "a.example" }, { queue, limitKey: "explicit" });
    const derived = await test.conveyor.enqueue(slow, { ms: 1, host: "b.example" }, { queue });
    const many = await test.conveyor.enqueueMany([
      { job: slow, payload: { ms: 1, host: "c.example" }, queue },
      { job: slow, payload: { ms: 1 }, queue, limitKey: "d" },
    ]);
    const copied = await test.conveyor.enqueueMany(Array.from({ length: 2_500 }, (_, i) => ({ job: slow, payload: { ms: 1, host: `h${i % 7}` }, queue })));
    const { rows } = await sql(test.conveyor, "SELECT id, limit_key FROM {{schema}}.jobs WHERE queue = $1", [queue]);
    const keyOf = new Map(rows.map((row) => [row.id, row.limit_key]));
    expect(keyOf.get(given.id)).toBe("explicit");
    expect(keyOf.get(derived.id)).toBe("b.example");
    expect(many.map((job) => keyOf.get(job.id))).toEqual(["c.example", "d"]);
    expect(keyOf.get(copied[9]!.id)).toBe("h2");
    // What enqueue returns, and what is read back, carry the key too.
    expect([given.limitKey, derived.limitKey, copied[9]!.limitKey]).toEqual(["explicit", "b.example", "h2"]);
    expect((await test.conveyor.getJob(derived.id))?.limitKey).toBe("b.example");

    const before = rows.length;
    await expect(test.conveyor.enqueue(slow, { ms: 1 }, { queue, limitKey: "" })).rejects.toThrow(ValidationError);
    await expect(test.conveyor.enqueue(slow, { ms: 1 }, { queue, limitKey: "x".repeat(257) })).rejects.toThrow(/limitKey must be a string of 1 to 256/);
    // A key far too long is quoted cut short, with its length, not echoed whole.
    for (const refused of [
      test.conveyor.enqueue(slow, { ms: 1 }, { queue, limitKey: "y".repeat(100_000) }),
      test.conveyor.keyLimits.set(queue, { concurrency: 1 }, { key: "y".repeat(100_000) }),
    ]) {
      const message = ((await refused.catch((e: unknown) => e)) as Error).message;
      expect(message).toMatch(/got "y{64}"… \(100000 characters\)$/);
      expect(message.length).toBeLessThan(200);
    }
    await expect(
      test.conveyor.enqueueMany([
        { job: slow, payload: { ms: 1 }, queue },
        { job: slow, payload: { ms: 1 }, queue, limitKey: "bad\u0001" },
      ]),
    ).rejects.toThrow(ValidationError);
    const throwing = defineJob({ kind: "throwing", schema: z.object({}), limitKey: () => { throw new Error("no account"); }, handler: () => {} });
    await expect(test.conveyor.enqueue(throwing, {}, { queue })).rejects.toThrow(/limitKey of job "throwing" threw: no account/);
    const { rows: after } = await sql(test.conveyor, "SELECT count(*)::int AS n FROM {{schema}}.jobs WHERE queue = $1", [queue]);
    expect(after[0].n).toBe(before);
    await sql(test.conveyor, "DELETE FROM {{schema}}.jobs WHERE queue = $1", [queue]);
  });
});

describe("key limit settings", () => {
  it("sets, lists and deletes a default and overrides, refusing bad input by name without changing anything", async () => {
    const queue = "settings";
    const set = await test.conveyor.keyLimits.set(queue, { concurrency: 5, rateLimit: { count: 100, intervalMs: 60_000 } });
    expect(set).toMatchObject({ queue, key: null, concurrency: 5, rateLimit: { count: 100, intervalMs: 60_000 } });
    await test.conveyor.keyLimits.set(queue, { throttleMs: 1_000 }, { key: "slow.example" });
    await test.conveyor.keyLimits.set(queue, { concurrency: null }, { key: "free.example" });
    const listed = await test.conveyor.keyLimits.list(queue);
    expect(listed.map(({ key, concurrency, rateLimit }) => ({ key, concurrency, rateLimit }))).toEqual([
      { key: null, concurrency: 5, rateLimit: { count: 100, intervalMs: 60_000 } },
      { key: "free.example", concurrency: null, rateLimit: null },
      { key: "slow.example", concurrency: null, rateLimit: { count: 1, intervalMs: 1_000 } },
    ]);
    // An omitted field keeps its value.
    await test.conveyor.keyLimits.set(queue, { concurrency: 7 });
    expect((await test.conveyor.keyLimits.list(queue))[0]).toMatchObject({ concurrency: 7, rateLimit: { count: 100, intervalMs: 60_000 } });

    const refusals: Array<[() => Promise<unknown>, RegExp]> = [
      [() => test.conveyor.keyLimits.set(queue, { concurrency: 0 }), /^concurrency must be an integer from 1 to 1000000/],
      [() => test.conveyor.keyLimits.set(queue, { rateLimit: { count: 1, intervalMs: 0 } }), /^rateLimit.intervalMs must be/],
      [() => test.conveyor.keyLimits.set(queue, { throttleMs: 5, rateLimit: null }), /^throttleMs is exclusive with rateLimit/],
      [() => test.conveyor.keyLimits.set(queue, {}), /^limits must set concurrency, rateLimit or throttleMs/],
      [() => test.conveyor.keyLimits.set(queue, { concurency: 3 } as never), /^concurency is not a key limit/],
      [() => test.conveyor.keyLimits.set("bad queue", { concurrency: 1 }), /^queue must be/],
      [() => test.conveyor.keyLimits.set(queue, { concurrency: 1 }, { key: "" }), /^key must be a string of 1 to 256/],
    ];
    for (const [call, message] of refusals) await expect(call()).rejects.toThrow(message);
    expect((await test.conveyor.keyLimits.list(queue)).length).toBe(3);

    // A queue may have queue limits and key limits at once, set in either order.
    await test.conveyor.queues.setLimits(queue, { concurrency: 3 });
    await test.conveyor.queues.deleteSettings(queue);
    await test.conveyor.queues.setLimits("capped-queue", { concurrency: 3 });
    await test.conveyor.keyLimits.set("capped-queue", { concurrency: 1 });
    await test.conveyor.keyLimits.delete("capped-queue");
    await test.conveyor.queues.deleteSettings("capped-queue");

    await test.conveyor.keyLimits.delete(queue, { key: "slow.example" });
    await expect(test.conveyor.keyLimits.delete(queue, { key: "slow.example" })).rejects.toThrow(NotFoundError);
    await test.conveyor.keyLimits.delete(queue);
    expect(await test.conveyor.keyLimits.list(queue)).toEqual([]);
    // Idempotent: a queue with no key limits is left as it is.
    expect(await test.conveyor.keyLimits.delete(queue)).toBe(false);
    expect(await test.conveyor.keyLimits.delete("never-limited")).toBe(false);
    expect(await test.conveyor.keyLimits.list()).toEqual([]);
  });
});

describe("key concurrency limit", () => {
  it("never runs more of one key than its limit across 6 competing workers, overrides included", async () => {
    const queue = "per-key-cap";
    await test.conveyor.keyLimits.set(queue, { concurrency: 2 });
    await test.conveyor.keyLimits.set(queue, { concurrency: 1 }, { key: "k0" });
    await test.conveyor.enqueueMany(
      Array.from({ length: 160 }, (_, i) => ({ job: slow, payload: { ms: 40, host: `k${i % 8}` }, queue })),
    );
    const workers = await startWorkers({ concurrency: 5, queues: [queue] });
    try {
      await waitFor("all key-capped jobs to finish", () => drained(test.conveyor), 60_000);
    } finally {
      await stopAll(workers);
    }
    const executions = await executionsOf(queue);
    expect(executions.length).toBe(160);
    const overlap = maxOverlapByKey(executions);
    expect(overlap.get("k0")).toBe(1);
    for (let k = 1; k < 8; k++) expect(overlap.get(`k${k}`), `key k${k}`).toBeLessThanOrEqual(2);
    // The limit was reached (the test would pass vacuously with one worker).
    expect(Math.max(...overlap.values())).toBe(2);
    // Nothing stays counted: no running rows, and keyStatus says idle.
    const status = await test.conveyor.keyLimits.status(queue, "k3");
    expect(status).toMatchObject({ running: 0, ready: 0, state: "idle", source: "default", limits: { concurrency: 2 } });
    await test.conveyor.keyLimits.delete(queue);
  });
});

describe("queue limits and key limits on one queue", () => {
  it("claim a job only when both allow it: the queue's cap and each key's, across 6 competing workers", async () => {
    const queue = "both-caps";
    await test.conveyor.queues.setLimits(queue, { concurrency: 3 });
    await test.conveyor.keyLimits.set(queue, { concurrency: 2 });
    await test.conveyor.keyLimits.set(queue, { concurrency: 1 }, { key: "k0" });
    await test.conveyor.enqueueMany(Array.from({ length: 96 }, (_, i) => ({ job: slow, payload: { ms: 30, host: `k${i % 6}` }, queue })));
    const workers = await startWorkers({ concurrency: 4, queues: [queue] });
    try {
      await waitFor("all doubly capped jobs to finish", () => drained(test.conveyor), 60_000);
    } finally {
      await stopAll(workers);
    }
    const executions = await executionsOf(queue);
    expect(executions.length).toBe(96);
    const overlap = maxOverlapByKey(executions);
    expect(overlap.get("k0")).toBe(1);
    for (let k = 1; k < 6; k++) expect(overlap.get(`k${k}`), `key k${k}`).toBeLessThanOrEqual(2);
    // The queue's cap held across keys, and bound (6 keys could run 11 at once).
    expect(maxOverlapByKey(executions.map((e) => ({ ...e, key: "all" }))).get("all")).toBe(3);
    await test.conveyor.keyLimits.delete(queue);
    await test.conveyor.queues.deleteSettings(queue);
  });

  it("start at most the queue's rate across keys, and each key's within it", async () => {
    const queue = "both-rates";
    const intervalMs = 600;
    await test.conveyor.queues.setLimits(queue, { rateLimit: { count: 4, intervalMs } });
    await test.conveyor.keyLimits.set(queue, { rateLimit: { count: 3, intervalMs } });
    await test.conveyor.enqueueMany(Array.from({ length: 12 }, (_, i) => ({ job: slow, payload: { ms: 1 }, queue, limitKey: `r${i % 2}` })));
    const workers = await startWorkers({ concurrency: 4, queues: [queue] });
    try {
      await waitFor("doubly rate-limited jobs to finish", () => drained(test.conveyor), 30_000);
    } finally {
      await stopAll(workers);
    }
    const executions = await executionsOf(queue);
    const perKey = maxStartsPerWindow(executions, intervalMs);
    for (const key of ["r0", "r1"]) expect(perKey.get(key)!.max, key).toBeLessThanOrEqual(3);
    // At most 4 starts per window in all, and the queue's rate bound them (the keys alone would allow 6).
    expect(maxStartsPerWindow(executions.map((e) => ({ ...e, key: "all" })), intervalMs).get("all")!.max).toBe(4);
    await test.conveyor.keyLimits.delete(queue);
    await test.conveyor.queues.deleteSettings(queue);
  });
});

describe("key rate limit and throttle", () => {
  it("starts at most count jobs of a key per window, rebuilt from the stored start times", async () => {
    const queue = "per-key-rate";
    const intervalMs = 600;
    await test.conveyor.keyLimits.set(queue, { rateLimit: { count: 3, intervalMs } });
    await test.conveyor.keyLimits.set(queue, { throttleMs: intervalMs }, { key: "t" });
    await test.conveyor.enqueueMany([
      ...Array.from({ length: 12 }, () => ({ job: slow, payload: { ms: 1 }, queue, limitKey: "r" })),
      ...Array.from({ length: 4 }, () => ({ job: slow, payload: { ms: 1 }, queue, limitKey: "t" })),
    ]);
    const workers = await startWorkers({ concurrency: 4, queues: [queue] });
    try {
      await waitFor("rate-limited jobs to finish", () => drained(test.conveyor), 30_000);
    } finally {
      await stopAll(workers);
    }
    const windows = maxStartsPerWindow(await executionsOf(queue), intervalMs);
    // 12 jobs at 3 per window take 4 windows; 4 jobs at 1 per window, 4.
    expect(windows.get("r")).toEqual({ max: 3, windows: 4 });
    expect(windows.get("t")).toEqual({ max: 1, windows: 4 });
    await test.conveyor.keyLimits.delete(queue);
  });
});

describe("fairness across keys", () => {
  it("starts all 10 jobs of a small key before a 100,000-job key has started 40", async () => {
    const queue = "fair-keys";
    // A limit that never binds: the queue is claimed per key, round-robin.
    await test.conveyor.keyLimits.set(queue, { concurrency: 1_000 });
    await test.conveyor.enqueueMany(Array.from({ length: 100_000 }, () => ({ job: slow, payload: { ms: 5 }, queue, limitKey: "big" })));
    await test.conveyor.enqueueMany(Array.from({ length: 10 }, () => ({ job: slow, payload: { ms: 5 }, queue, limitKey: "small" })));
    const workers = await startWorkers({ concurrency: 4, queues: [queue] });
    try {
      await waitFor("the small key's jobs to finish", async () => {
        const { rows } = await sql(
          test.conveyor,
          "SELECT count(*)::int AS n FROM {{schema}}.jobs WHERE queue = $1 AND limit_key = 'small' AND status = 'succeeded'",
          [queue],
        );
        return rows[0].n === 10;
      }, 60_000);
    } finally {
      await stopAll(workers);
    }
    const { rows } = await sql(
      test.conveyor,
      `SELECT count(*)::int AS n FROM {{schema}}.job_attempts AS e JOIN {{schema}}.jobs AS j ON j.id = e.job_id
       WHERE j.queue = $1 AND j.limit_key = 'big'
         AND e.started_at <= (SELECT max(e2.started_at) FROM {{schema}}.job_attempts AS e2
                              JOIN {{schema}}.jobs AS j2 ON j2.id = e2.job_id WHERE j2.queue = $1 AND j2.limit_key = 'small')`,
      [queue],
    );
    // The keys alternate (fewest running first): 10 in practice.
    expect(rows[0].n).toBeLessThan(40);
    await sql(test.conveyor, "DELETE FROM {{schema}}.jobs WHERE queue = $1", [queue]);
    await test.conveyor.keyLimits.delete(queue);
  }, 120_000);
});

describe("runtime changes and explanations", () => {
  it("applies a changed limit at the next claim, explains a held key, and lists the top keys", async () => {
    const queue = "runtime";
    await test.conveyor.keyLimits.set(queue, { concurrency: 1 });
    await test.conveyor.enqueueMany(Array.from({ length: 30 }, (_, i) => ({ job: slow, payload: { ms: 300 }, queue, limitKey: i < 20 ? "hot" : "cold" })));
    const workers = await startWorkers({ concurrency: 5, queues: [queue] });
    try {
      await waitFor("the hot key held at its limit", async () => (await test.conveyor.keyLimits.status(queue, "hot")).running === 1);
      const held = await test.conveyor.keyLimits.status(queue, "hot");
      expect(held.state).toBe("concurrency_limit");
      expect(held.reason).toMatch(/1 running, at the key's concurrency limit of 1 \(default\)/);
      const top = await test.conveyor.keyLimits.top(queue, 2);
      expect(top.map((k) => k.key)).toEqual(["hot", "cold"]);
      expect(top[0]).toMatchObject({ running: 1, limits: { concurrency: 1 }, source: "default" });

      // Raised at runtime: the workers (no restart) run 4 of the hot key at once.
      await test.conveyor.keyLimits.set(queue, { concurrency: 4 }, { key: "hot" });
      await waitFor("the hot key at its new limit", async () => (await test.conveyor.keyLimits.status(queue, "hot")).running === 4, 10_000, 10);
      await waitFor("every runtime job to finish", () => drained(test.conveyor), 30_000);
    } finally {
      await stopAll(workers);
    }
    const overlap = maxOverlapByKey(await executionsOf(queue));
    expect(overlap.get("hot")).toBe(4);
    expect(overlap.get("cold")).toBe(1);
    await test.conveyor.keyLimits.delete(queue);
  }, 60_000);

  it("explains a paused queue, a full rate window and a key with nothing waiting", async () => {
    const queue = "explain";
    await test.conveyor.keyLimits.set(queue, { rateLimit: { count: 1, intervalMs: 60_000 } });
    await test.conveyor.enqueueMany([{ job: slow, payload: { ms: 1 }, queue, limitKey: "a" }, { job: slow, payload: { ms: 1 }, queue, limitKey: "a" }]);
    const worker = clients[0]!.worker({ pollIntervalMs: 50, concurrency: 2, queues: [queue] });
    await worker.start();
    try {
      await waitFor("one job of a to finish", async () => (await test.conveyor.keyLimits.status(queue, "a")).state === "rate_limit");
      const status = await test.conveyor.keyLimits.status(queue, "a");
      expect(status.window).toMatchObject({ count: 1 });
      expect(status.reason).toMatch(/rate limit of 1 per 60000 ms \(default\); the window closes at/);
      await test.conveyor.queues.pause(queue);
      expect((await test.conveyor.keyLimits.status(queue, "a")).state).toBe("paused");
      expect((await test.conveyor.keyLimits.status(queue, "nobody")).state).toBe("idle");
      await expect(test.conveyor.keyLimits.status(queue, "")).rejects.toThrow(/^key must be/);
    } finally {
      await worker.stop({ graceMs: 1_000 });
    }
    await test.conveyor.queues.deleteSettings(queue);
    await test.conveyor.keyLimits.delete(queue);
    await sql(test.conveyor, "DELETE FROM {{schema}}.jobs WHERE queue = $1", [queue]);
  });
});

describe("nothing stays counted against a key", () => {
  it("frees the key's slot when its job fails, is cancelled while running, or is handed back at shutdown", async () => {
    const queue = "endings";
    await test.conveyor.keyLimits.set(queue, { concurrency: 1 });
    const running = async () => (await test.conveyor.keyLimits.status(queue, "k")).running;
    // Heartbeats every 200 ms: a running job sees its cancel at the next one.
    const worker = () => clients[0]!.worker({ pollIntervalMs: 50, heartbeatMs: 200, concurrency: 3, queues: [queue] });

    // Failure: the job goes to retrying (a minute away); the key's slot is free at once.
    const failing = await test.conveyor.enqueue(controlled, { mode: "fail" }, { queue, limitKey: "k" });
    let w = worker();
    await w.start();
    try {
      await waitFor("the failure to be recorded", async () => (await test.conveyor.getJob(failing.id))?.status === "retrying");
      expect(await running()).toBe(0);

      // Cancel while running: the handler sees its signal, the job ends cancelled, the slot is free.
      const waiting = await test.conveyor.enqueue(controlled, { mode: "wait" }, { queue, limitKey: "k" });
      await waitFor("the waiting job to run", async () => (await running()) === 1);
      await test.conveyor.cancel(waiting.id);
      await waitFor("the cancel to end it", async () => (await test.conveyor.getJob(waiting.id))?.status === "cancelled", 10_000);
      expect(await running()).toBe(0);

      // Shutdown: a handler still running past the grace period is handed back to the queue.
      const handedBack = await test.conveyor.enqueue(controlled, { mode: "wait" }, { queue, limitKey: "k" });
      await waitFor("the next job to run", async () => (await running()) === 1);
      await w.stop({ graceMs: 50 });
      expect((await test.conveyor.getJob(handedBack.id))?.status).toBe("queued");
      expect(await running()).toBe(0);

      // And the key runs again: the handed-back job starts on a new worker.
      w = worker();
      await w.start();
      await waitFor("the handed-back job to run again", async () => (await running()) === 1);
    } finally {
      await w.stop({ graceMs: 50 });
    }
    await sql(test.conveyor, "DELETE FROM {{schema}}.jobs WHERE queue = $1", [queue]);
    await test.conveyor.keyLimits.delete(queue);
  }, 30_000);
});
