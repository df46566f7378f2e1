/**
 * Cron schedules against real PostgreSQL: four workers (separate clients on
 * one schema) enqueue every tick of a per-second schedule exactly once, until
 * their passes (each one's test signal) have enqueued five ticks; the
 * row lock and the idempotency key each stop a second enqueue on their own;
 * missed ticks after downtime under `catch-up` (with its limit) and `skip`;
 * a time-zone schedule stored with the right next tick; definition changes.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { Conveyor, createWorkerMetrics, defineJob, type Worker } from "../packages/core/src/index.js";
import { parseCron } from "../packages/core/src/core/cron.js";
import { workerTestSignals } from "../packages/core/src/worker/test-signals.js";
import { createTestConveyor, testDatabaseUrl, type TestConveyor } from "./helpers/database.js";
import { silent, sql } from "./worker/support.js";
import { waitFor } from "./helpers/wait-for.js";

const seen: Array<{ schedule: string; at: Date } | null> = [];

function everySecond(kind: string, name: string) {
  return defineJob({
    kind,
    schema: z.object({ source: z.string() }),
    // catch-up: a loaded machine that wakes every worker over a second late must still enqueue every tick here.
    cron: { name, cron: "* * * * * *", payload: { source: "cron" }, missed: { policy: "catch-up", limit: 1_000 } },
    async handler({ job }) {
      seen.push(job.cronTick);
    },
  });
}

describe("exactly once across four workers", () => {
  const ticker = everySecond("tick", "every-second");
  let test: TestConveyor;
  const clients: Conveyor[] = [];
  const workers: Worker[] = [];

  beforeAll(async () => {
    test = await createTestConveyor({ jobs: [ticker], logger: silent });
    clients.push(test.conveyor);
    for (let i = 0; i < 3; i++) {
      clients.push(new Conveyor({ connectionString: testDatabaseUrl(), schema: test.schema, jobs: [ticker], logger: silent, poolSize: 3 }));
    }
  });
  afterAll(async () => {
    await Promise.all(workers.map((worker) => worker.stop({ graceMs: 1_000 })));
    for (const client of clients.slice(1)) await client.close();
    await test?.cleanup();
  });

  it("enqueues each tick of a per-second schedule once over five ticks: no gaps, no duplicates", async () => {
    for (const [index, client] of clients.entries()) workers.push(client.worker({ id: `cron-worker-${index}`, concurrency: 4 }));
    const passes = workers.map((worker) => workerTestSignals(worker).scheduler!.passed);
    await Promise.all(workers.map((worker) => worker.start()));
    // Each worker passes at every tick, whether it or another enqueued it: each waits out its own passes until five are in.
    let enqueued = 0;
    await Promise.all(
      passes.map(async (passed) => {
        while (enqueued < 5) {
          const pass = await passed.wait();
          enqueued += pass.enqueued; // read after the wait: the other workers' loops add too
        }
      }),
    );
    await Promise.all(workers.map((worker) => worker.stop({ graceMs: 5_000 })));

    const { rows } = await sql(
      test.conveyor,
      `SELECT run_at, count(*)::int AS n, min(idempotency_key) AS key, min(payload::text) AS payload
       FROM {{schema}}.jobs WHERE kind = 'tick' GROUP BY run_at ORDER BY run_at`,
    );
    expect(rows.length).toBeGreaterThanOrEqual(5);
    const ticks = rows.map((row: { run_at: Date }) => row.run_at.getTime());
    for (const row of rows) {
      expect(row.n).toBe(1);
      expect(row.key).toBe(`cron:every-second:${row.run_at.toISOString()}`);
      expect(JSON.parse(row.payload)).toEqual({ source: "cron" });
      expect(row.run_at.getMilliseconds()).toBe(0);
    }
    // Consecutive seconds from the first tick to the last: nothing skipped.
    ticks.slice(1).forEach((tick, i) => expect(tick - ticks[i]!).toBe(1_000));

    const [schedule] = await test.conveyor.listSchedules();
    expect(schedule!.lastTickAt!.getTime()).toBe(ticks.at(-1));
    expect(schedule!.nextTickAt!.getTime()).toBeGreaterThan(ticks.at(-1)!);

    // Handlers saw their tick: the schedule's name and a time that is one of the stored ticks.
    expect(seen.length).toBeGreaterThan(0);
    for (const tick of seen) {
      expect(tick!.schedule).toBe("every-second");
      expect(ticks).toContain(tick!.at.getTime());
    }
  });
});

describe("one schedule row, guarded twice", () => {
  // Hourly, so no new tick comes due while the test runs (it would only need an hour boundary in the next seconds).
  const hourly = defineJob({
    kind: "hourly",
    schema: z.object({}),
    cron: { name: "hourly", cron: "0 * * * *", missed: { policy: "catch-up", limit: 5 } },
    handler: async () => {},
  });
  let test: TestConveyor;
  let worker: Worker;

  beforeAll(async () => {
    test = await createTestConveyor({ jobs: [hourly], logger: silent });
    // Started (which writes the schedule row) and stopped: passes then run only when the test calls enqueueDueTicks.
    worker = test.conveyor.worker({ metrics: await createWorkerMetrics() });
    await worker.start();
    await worker.stop();
  });
  afterAll(() => test?.cleanup());

  const jobCount = async () => (await sql(test.conveyor, `SELECT count(*)::int AS n FROM {{schema}}.jobs`)).rows[0].n as number;
  const overdueBy = (hours: number) =>
    sql(test.conveyor, `UPDATE {{schema}}.cron_schedules SET next_tick_at = date_trunc('hour', now()) - $1 * interval '1 hour'`, [hours]);

  it("a worker skips a schedule another worker holds, and enqueues it once that one lets go", async () => {
    await overdueBy(1);
    const other = await test.conveyor.pool.connect();
    try {
      await other.query("BEGIN");
      await other.query(`SELECT 1 FROM "${test.schema}".cron_schedules WHERE name = 'hourly' FOR UPDATE`);
      expect(await worker.enqueueDueTicks()).toBe(0);
      expect(await jobCount()).toBe(0);
      await other.query("ROLLBACK");
    } finally {
      other.release();
    }
    expect(await worker.enqueueDueTicks()).toBe(2);
    expect(await worker.enqueueDueTicks()).toBe(0); // advanced past now: nothing is due any more
    expect(await jobCount()).toBe(2);
    // The worker's metric counts what it enqueued, by schedule, and not the pass held off above.
    const metric = await worker.metrics!.cronTicksEnqueued.get();
    expect(metric.values).toEqual([expect.objectContaining({ labels: { schedule: "hourly" }, value: 2 })]);
  });

  it("the idempotency key stops a tick enqueued again after the row was moved back", async () => {
    const before = await jobCount();
    await overdueBy(1);
    expect(await worker.enqueueDueTicks()).toBe(0);
    expect(await jobCount()).toBe(before);
    const [schedule] = await test.conveyor.listSchedules();
    expect(schedule!.nextTickAt!.getTime()).toBeGreaterThan(Date.now() - 1_000);
  });
});

describe("missed ticks after downtime", () => {
  // Hourly, so no new tick comes due while the test runs.
  const defineHourly = (kind: string, missed?: { policy: "skip" | "catch-up"; limit?: number }) =>
    defineJob({ kind, schema: z.object({}), cron: { cron: "0 * * * *", ...(missed ? { missed } : {}) }, handler: async () => {} });
  const caughtUp = defineHourly("caught-up", { policy: "catch-up", limit: 3 });
  const skipped = defineHourly("skipped");
  let test: TestConveyor;

  beforeAll(async () => {
    test = await createTestConveyor({ jobs: [caughtUp, skipped], logger: silent });
  });
  afterAll(() => test?.cleanup());

  it("catch-up enqueues the most recent `limit` missed ticks, each with its own time; skip only the latest", async () => {
    // A first run creates the rows, then the fleet goes down for ten hours (the rows' next tick is set back).
    const first = test.conveyor.worker({ schedules: true });
    await first.start();
    await first.stop();
    await sql(test.conveyor, `UPDATE {{schema}}.cron_schedules SET next_tick_at = date_trunc('hour', now()) - interval '10 hours'`);

    // A restart with the same definitions keeps the stored next tick, so the missed ones are found.
    const again = test.conveyor.worker();
    await again.start();
    try {
      await waitFor("missed ticks enqueued", async () => {
        const { rows } = await sql(test.conveyor, `SELECT count(*)::int AS n FROM {{schema}}.jobs`);
        return rows[0].n >= 4;
      });
    } finally {
      await again.stop();
    }
    const schedules = await test.conveyor.listSchedules();
    const byKind = async (kind: string) =>
      (await sql(test.conveyor, `SELECT run_at FROM {{schema}}.jobs WHERE kind = $1 ORDER BY run_at`, [kind])).rows.map((row) => row.run_at.getTime());

    const caughtUpRow = schedules.find((schedule) => schedule.kind === "caught-up")!;
    const last = caughtUpRow.lastTickAt!.getTime();
    const hour = 3_600_000;
    expect(await byKind("caught-up")).toEqual([last - 2 * hour, last - hour, last]);
    expect(caughtUpRow.nextTickAt!.getTime()).toBe(last + hour);
    expect(caughtUpRow.missed).toEqual({ policy: "catch-up", limit: 3 });

    const skippedRow = schedules.find((schedule) => schedule.kind === "skipped")!;
    expect(await byKind("skipped")).toEqual([skippedRow.lastTickAt!.getTime()]);
    expect(skippedRow.missed).toEqual({ policy: "skip", limit: 10 });
    // The latest tick is the start of the current hour.
    expect(skippedRow.lastTickAt!.getTime()).toBe(last);
    expect(Date.now() - last).toBeLessThan(3_600_000 + 60_000);
  });
});

describe("stored schedules", () => {
  let test: TestConveyor;
  afterAll(() => test?.cleanup());

  it("stores a time-zone schedule with its next tick computed in that zone, and a changed expression takes effect", async () => {
    const morning = (cron: string) =>
      defineJob({
        kind: "report",
        schema: z.object({ format: z.enum(["pdf", "csv"]) }),
        cron: [{ name: "report.morning", cron, timezone: "America/New_York", payload: { format: "pdf" }, tenant: "acme", queue: "reports" }],
        handler: async () => {},
      });
    test = await createTestConveyor({ jobs: [morning("0 9 * * *")], logger: silent });
    const before = new Date();
    const worker = test.conveyor.worker();
    await worker.start();
    await worker.stop();

    const [stored] = await test.conveyor.listSchedules();
    expect(stored).toMatchObject({
      name: "report.morning",
      kind: "report",
      cron: "0 9 * * *",
      timezone: "America/New_York",
      tenant: "acme",
      queue: "reports",
      payload: { format: "pdf" },
      lastTickAt: null,
    });
    const next = stored!.nextTickAt!;
    expect(next.getTime()).toBe(parseCron("0 9 * * *", "America/New_York", "cron").nextTick(before)!.getTime());
    const newYork = new Intl.DateTimeFormat("en-US", { timeZone: "America/New_York", hour: "2-digit", minute: "2-digit", hourCycle: "h23" });
    expect(newYork.format(next)).toBe("09:00");
    expect(next.getTime() - before.getTime()).toBeLessThanOrEqual(24 * 3_600_000 + 3_600_000);
    expect(await test.conveyor.listSchedules({ tenant: "other" })).toEqual([]);

    // A new deploy changes the expression: the row follows, from the new expression's next tick.
    const changed = new Conveyor({ connectionString: testDatabaseUrl(), schema: test.schema, jobs: [morning("30 17 * * 1-5")], logger: silent, poolSize: 2 });
    try {
      const deployed = changed.worker();
      await deployed.start();
      await deployed.stop();
      const [updated] = await changed.listSchedules();
      expect(updated!.cron).toBe("30 17 * * 1-5");
      expect(newYork.format(updated!.nextTickAt!)).toBe("17:30");
      expect(updated!.updatedAt.getTime()).toBeGreaterThan(stored!.updatedAt.getTime());
    } finally {
      await changed.close();
    }
  });

  it("a worker with schedules turned off writes no schedule rows", async () => {
    const quiet = defineJob({ kind: "quiet", schema: z.object({}), cron: "* * * * *", handler: async () => {} });
    const own = await createTestConveyor({ jobs: [quiet], logger: silent });
    try {
      const worker = own.conveyor.worker({ schedules: false });
      await worker.start();
      await worker.stop();
      expect(await own.conveyor.listSchedules()).toEqual([]);
    } finally {
      await own.cleanup();
    }
  });
});
