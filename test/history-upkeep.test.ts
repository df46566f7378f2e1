/**
 * Every worker keeps job_history's day partitions made ahead
 * (worker/history-upkeep.ts), whether it prunes or not: once as it starts,
 * before it claims, then on its interval. Runs are awaited through the
 * upkeep's test signal, never by sleeping.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type Conveyor, createWorkerMetrics, defineJob } from "../packages/core/src/index.js";
import { NO_METRICS } from "../packages/core/src/metrics/worker-metrics.js";
import { HistoryUpkeep } from "../packages/core/src/worker/history-upkeep.js";
import { workerTestSignals } from "../packages/core/src/worker/test-signals.js";
import type { Worker } from "../packages/core/src/worker/worker.js";
import { createTestConveyor, dbOf, type TestConveyor } from "./helpers/database.js";
import { DAY_MS, makeJobs } from "./retention-support.js";
import { emptyPayload, silent, sql } from "./worker/support.js";

const noop = defineJob({ kind: "noop", schema: emptyPayload, maxAttempts: 2, handler: () => {} });

let test: TestConveyor;
let conveyor: Conveyor;
beforeEach(async () => {
  test = await createTestConveyor({ jobs: [noop], logger: silent });
  conveyor = test.conveyor;
});
afterEach(() => test?.cleanup());

/** `job_history_YYYYMMDD` of today (UTC) plus `offset` days. */
function dayName(offset: number): string {
  return `job_history_${new Date(Date.now() + offset * DAY_MS).toISOString().slice(0, 10).replaceAll("-", "")}`;
}

/** Drop the day partitions of today + `from` to today + `to` in one statement, as on a schema nobody kept up. */
async function dropDays(from: number, to: number): Promise<void> {
  const names = Array.from({ length: to - from + 1 }, (_, i) => `{{schema}}.${dayName(from + i)}`);
  await sql(conveyor, `DROP TABLE ${names.join(", ")}`);
}

/** The day partitions job_history has. */
async function days(): Promise<string[]> {
  const { rows } = await sql(
    conveyor,
    `SELECT c.relname AS name FROM pg_inherits AS i JOIN pg_class AS c ON c.oid = i.inhrelid
     WHERE i.inhparent = '{{schema}}.job_history'::regclass AND c.relname ~ '^job_history_[0-9]{8}$' ORDER BY 1`,
  );
  return rows.map((row) => row.name as string);
}

const week = () => Array.from({ length: 8 }, (_, i) => dayName(i));

async function upkeepErrors(worker: Worker): Promise<number> {
  const { values } = await worker.metrics!.databaseErrors.get();
  return values.filter((v) => v.labels.operation === "history_upkeep").reduce((sum, v) => sum + v.value, 0);
}

describe("history's days ahead, kept by every worker", () => {
  it("a worker with retention off makes the missing days as it starts, and a job ending on one lands in it", async () => {
    await dropDays(1, 7);
    expect(await days()).toEqual([dayName(0)]);
    const worker = conveyor.worker({ logger: silent, retention: false });
    const signals = workerTestSignals(worker);
    expect(signals.pruner).toBeNull();
    await worker.start();
    try {
      expect(await signals.historyUpkeep.extended.wait()).toEqual({ made: 7 });
    } finally {
      await worker.stop();
    }
    expect(await days()).toEqual(week());

    const [id] = await makeJobs(conveyor, "noop", 1, "succeeded", -3 * DAY_MS); // finished 3 days from now
    const { rows } = await sql(conveyor, "SELECT tableoid::regclass::text AS part FROM {{schema}}.jobs WHERE id = $1", [id]);
    expect(rows).toEqual([{ part: `${test.schema}.${dayName(3)}` }]);
    expect((await sql(conveyor, "SELECT count(*)::int AS n FROM {{schema}}.job_history_default")).rows[0].n).toBe(0);
  });

  it("two workers starting at once both run it, and each day is made once", async () => {
    await dropDays(1, 7);
    const workers = [conveyor.worker({ logger: silent, retention: false, metrics: await createWorkerMetrics() }), conveyor.worker({ logger: silent, metrics: await createWorkerMetrics() })];
    const runs = workers.map((worker) => workerTestSignals(worker).historyUpkeep.extended);
    await Promise.all(workers.map((worker) => worker.start()));
    try {
      const made = await Promise.all(runs.map((run) => run.wait()));
      // One made the days; the other found them made, or left them to the one holding the lock.
      expect(made.map((run) => run.made).sort()).toEqual([0, 7]);
      expect(await Promise.all(workers.map(upkeepErrors))).toEqual([0, 0]);
    } finally {
      await Promise.all(workers.map((worker) => worker.stop()));
    }
    expect(await days()).toEqual(week());
  });

  it("runs again on its interval, making a day dropped since", async () => {
    const upkeep = new HistoryUpkeep(dbOf(conveyor).retention, NO_METRICS, silent, 20);
    upkeep.testSignals.init();
    await upkeep.start();
    try {
      expect(await upkeep.testSignals.extended.wait()).toEqual({ made: 0 });
      await dropDays(6, 7);
      // Runs that came before the drop made nothing; the first after it makes both days.
      let run = await upkeep.testSignals.extended.wait();
      while (run.made === 0) run = await upkeep.testSignals.extended.wait();
      expect(run).toEqual({ made: 2 });
    } finally {
      await upkeep.stop();
    }
    expect(await days()).toEqual(week());
  });

  it("a run that fails is counted, and the worker starts and runs jobs all the same", async () => {
    await sql(conveyor, "ALTER FUNCTION {{schema}}.job_history_extend(date, integer) RENAME TO job_history_extend_away");
    const worker = conveyor.worker({ logger: silent, retention: false, metrics: await createWorkerMetrics() });
    await worker.start();
    try {
      expect(await upkeepErrors(worker)).toBe(1);
      const job = await conveyor.enqueue(noop, {});
      expect((await conveyor.waitFor(job.id)).status).toBe("succeeded");
    } finally {
      await worker.stop();
    }
    await sql(conveyor, "ALTER FUNCTION {{schema}}.job_history_extend_away(date, integer) RENAME TO job_history_extend");
  });
});
