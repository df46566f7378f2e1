import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { Conveyor, defineJob, type Worker } from "../packages/core/src/index.js";
import { freshExecutionIds } from "../packages/core/src/store/execution-ids.js";
import { bindQueries } from "../packages/core/src/store/queries.js";
import { createTestConveyor, testDatabaseUrl, type TestConveyor } from "./helpers/database.js";
import { silent, sql } from "./worker/support.js";
import { waitFor } from "./helpers/wait-for.js";

// One tenant enqueues 100,000 jobs, then another enqueues 100. Without
// fairness the small tenant waits behind the whole backlog (priority, then
// run_at); with fairness "tenant" every claim hands slots to the tenant with
// the fewest jobs running, so the two tenants start jobs at about the same
// rate while both have work.

const BIG = 100_000;
const SMALL = 100;
const CONCURRENCY = 20;
/**
 * The stated bound: with fairness on, all of the small tenant's 100 jobs
 * start before the big tenant has started 200 (an equal share, 100, plus
 * slack for claim batches and completions in flight; about 100-110 is typical).
 */
const BIG_STARTS_BOUND = 2 * SMALL;

const work = defineJob({
  kind: "work",
  schema: z.object({ ms: z.number() }),
  handler: async ({ payload }) => {
    await new Promise((resolve) => setTimeout(resolve, payload.ms));
  },
});
const jobs = [work];

let test: TestConveyor;

beforeAll(async () => {
  test = await createTestConveyor({ jobs, logger: silent });
  await test.conveyor.enqueueMany(Array.from({ length: BIG }, () => ({ job: work, payload: { ms: 5 }, tenant: "big" })));
  await test.conveyor.enqueueMany(Array.from({ length: SMALL }, () => ({ job: work, payload: { ms: 5 }, tenant: "small" })));
  await sql(test.conveyor, "ANALYZE {{schema}}.jobs");
}, 180_000);

afterAll(async () => {
  await test?.cleanup();
});

/** Attempts started by one worker, per tenant, up to (and including) `until` if given. */
async function startsBy(workerId: string): Promise<{ big: number; small: number; lastSmallStart: Date | null }> {
  const { rows } = await sql(
    test.conveyor,
    `SELECT j.tenant, count(*)::int AS n, max(e.started_at) AS last
     FROM {{schema}}.job_attempts AS e JOIN {{schema}}.jobs AS j ON j.id = e.job_id
     WHERE e.worker_id = $1 GROUP BY j.tenant`,
    [workerId],
  );
  const of = (tenant: string) => rows.find((row: { tenant: string }) => row.tenant === tenant);
  return { big: of("big")?.n ?? 0, small: of("small")?.n ?? 0, lastSmallStart: of("small")?.last ?? null };
}

describe("the fast claim", () => {
  it("keeps the ready index and reads the restricted queues once per statement (an InitPlan)", async () => {
    const { jobClaim } = bindQueries(test.schema);
    const client = await test.conveyor.pool.connect();
    try {
      await client.query(`PREPARE fast_claim(text, int, text[], text[], float8, uuid[]) AS ${jobClaim.text}`);
      await client.query("SET plan_cache_mode = force_custom_plan");
      const { rows } = await client.query(`EXPLAIN EXECUTE fast_claim('w', 10, '{work}', NULL, 60000, '${freshExecutionIds(10, Date.now())}')`);
      const plan = rows.map((row: { "QUERY PLAN": string }) => row["QUERY PLAN"]).join("\n");
      expect(plan).toContain("jobs_ready_idx");
      expect(plan).toMatch(/InitPlan/);
      expect(plan).toMatch(/queue_settings/);
      await client.query("DEALLOCATE fast_claim");
    } finally {
      client.release();
    }
  });
});

describe("tenant fairness", () => {
  it("without fairness, the small tenant waits behind the big backlog", async () => {
    const worker = test.conveyor.worker({ concurrency: CONCURRENCY, pollIntervalMs: 50 });
    await worker.start();
    try {
      await waitFor("the big tenant to start 400 jobs", async () => (await startsBy(worker.id)).big >= 400, 60_000);
    } finally {
      await worker.stop({ graceMs: 10_000 });
    }
    expect((await startsBy(worker.id)).small).toBe(0);
  });

  it(`with fairness "tenant", all ${SMALL} small-tenant jobs start before ${BIG_STARTS_BOUND} big-tenant jobs do`, async () => {
    const worker = test.conveyor.worker({ concurrency: CONCURRENCY, pollIntervalMs: 50, fairness: "tenant" });
    await worker.start();
    try {
      await waitFor("every small-tenant job to start", async () => (await startsBy(worker.id)).small === SMALL, 60_000);
    } finally {
      await worker.stop({ graceMs: 10_000 });
    }
    const { lastSmallStart } = await startsBy(worker.id);
    const { rows } = await sql(
      test.conveyor,
      `SELECT count(*)::int AS n FROM {{schema}}.job_attempts AS e JOIN {{schema}}.jobs AS j ON j.id = e.job_id
       WHERE e.worker_id = $1 AND j.tenant = 'big' AND e.started_at <= $2`,
      [worker.id, lastSmallStart],
    );
    expect(rows[0].n).toBeLessThan(BIG_STARTS_BOUND);
    // The big tenant was not starved either: it got about its share meanwhile.
    expect(rows[0].n).toBeGreaterThanOrEqual(SMALL / 2);
  });
});

describe("per-tenant concurrency cap", () => {
  const clients: Conveyor[] = [];
  afterAll(async () => {
    await Promise.all(clients.map((client) => client.close()));
  });

  it("holds across 4 competing workers, with and without fairness", async () => {
    const queue = "capped-tenant";
    await test.conveyor.queues.setTenantLimits("capped", { concurrency: 2 });
    await test.conveyor.enqueueMany(Array.from({ length: 24 }, () => ({ job: work, payload: { ms: 40 }, tenant: "capped", queue })));
    for (let i = 0; i < 4; i++) {
      clients.push(new Conveyor({ connectionString: testDatabaseUrl(), schema: test.schema, jobs, logger: silent, poolSize: 3 }));
    }
    const workers: Worker[] = clients.map((client, i) =>
      client.worker({ concurrency: 5, pollIntervalMs: 50, queues: [queue], fairness: i % 2 === 0 ? "tenant" : "off" }),
    );
    await Promise.all(workers.map((worker) => worker.start()));
    try {
      await waitFor("the capped tenant's jobs to finish", async () => {
        const { rows } = await sql(test.conveyor, `SELECT count(*)::int AS n FROM {{schema}}.jobs WHERE tenant = 'capped' AND status <> 'succeeded'`);
        return rows[0].n === 0;
      });
    } finally {
      await Promise.all(workers.map((worker) => worker.stop({ graceMs: 5_000 })));
    }
    const { rows } = await sql(
      test.conveyor,
      `SELECT (extract(epoch FROM e.started_at) * 1000000)::int8 AS start, (extract(epoch FROM e.finished_at) * 1000000)::int8 AS end
       FROM {{schema}}.job_attempts AS e JOIN {{schema}}.jobs AS j ON j.id = e.job_id WHERE j.tenant = 'capped'`,
    );
    const executions = rows as Array<{ start: number; end: number }>;
    expect(executions).toHaveLength(24);
    const overlaps = executions.map((e) => executions.filter((o) => o.start <= e.start && o.end > e.start).length);
    expect(Math.max(...overlaps)).toBeLessThanOrEqual(2);
    await test.conveyor.queues.setTenantLimits("capped", { concurrency: null });
  });
});
