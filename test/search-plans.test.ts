/**
 * The plans of searches, counts and the overview on a store of 200,000
 * jobs (most finished, some in every other state, a recent window of
 * attempts), analyzed: each reaches its rows through a key or a partial
 * index and never reads the jobs table through. Checked on the plans as
 * run (EXPLAIN ANALYZE): a node that was planned but never executed (the
 * small-table count behind its one-time test) reads nothing. Counts are
 * planned as the store runs them, without sequential scans where an index
 * serves (store/sql/bounded-reads.ts).
 */
import type pg from "pg";
import { asOneJobsTable } from "./helpers/query-plans.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkJobFilter } from "../packages/core/src/client/job-filter.js";
import type { JobFilter } from "../packages/core/src/core/job-filter.js";
import { quoteIdent } from "../packages/core/src/store/db.js";
import { bindQueries } from "../packages/core/src/store/queries.js";
import { jobCountStatement, jobEstimateStatement, jobFilterCondition, jobSearchStatement } from "../packages/core/src/store/sql/job-filter.js";
import { createTestConveyor, type TestConveyor } from "./helpers/database.js";
import { fillJobsSql } from "./helpers/fill-jobs.js";
import type { PlanNode } from "./helpers/query-plans.js";
import { silent, sql } from "./worker/support.js";

const JOBS = 200_000;
const SPAN_MS = 2 * 60 * 60 * 1000;

let t: TestConveyor;
let client: pg.PoolClient;

beforeAll(async () => {
  t = await createTestConveyor({ logger: silent });
  await sql(t.conveyor, fillJobsSql(JOBS, SPAN_MS));
  await sql(t.conveyor, "INSERT INTO {{schema}}.workers (id, hostname, pid, queues, kinds, concurrency) VALUES ('filler-worker', 'h', 1, NULL, '{k1}', 10)");
  await sql(t.conveyor, "ANALYZE {{schema}}.jobs, {{schema}}.job_executions");
  client = await t.conveyor.pool.connect();
  // As each of these statements runs (store/bounded-read.ts).
  await client.query("SET jit = off");
}, 120_000);

afterAll(async () => {
  client?.release();
  await t?.cleanup();
});

/** Every node of a plan, depth first. */
function nodes(plan: PlanNode, out: PlanNode[] = []): PlanNode[] {
  out.push(plan);
  for (const child of plan.Plans ?? []) nodes(child, out);
  return out;
}

/** The plan of `text` as it ran with `values`, as the nodes that were executed at least once. */
async function executed(text: string, values: unknown[]): Promise<PlanNode[]> {
  const { rows } = await client.query(`EXPLAIN (ANALYZE, FORMAT JSON) ${text}`, values);
  return asOneJobsTable(client, nodes(rows[0]["QUERY PLAN"][0].Plan).filter((node) => (node["Actual Loops"] ?? 0) > 0), t.schema);
}

/** The same for a count, planned as the store runs counts: without sequential scans where an index serves. */
async function executedCount(text: string, values: unknown[]): Promise<PlanNode[]> {
  await client.query("SET enable_seqscan = off");
  try {
    return await executed(text, values);
  } finally {
    await client.query("RESET enable_seqscan");
  }
}

/** Rows a plan's executed scans of jobs read: returned or filtered out, over all their loops. */
function rowsRead(plan: PlanNode[]): number {
  return plan
    .filter((node) => node["Relation Name"] === "jobs")
    .reduce((sum, node) => sum + ((node["Actual Rows"] ?? 0) + (node["Rows Removed by Filter"] ?? 0)) * (node["Actual Loops"] ?? 0), 0);
}

/**
 * Executed scans that read a whole table: sequential scans of jobs or
 * job_executions. A scan of a partition of jobs that every row it read
 * matched (dead jobs, for a count of dead jobs) read no row the statement
 * did not ask for, as many as its limit: that is not reading the table
 * through.
 */
function tableScans(plan: PlanNode[]): PlanNode[] {
  return plan.filter(
    (node) =>
      node["Node Type"] === "Seq Scan" &&
      ["jobs", "job_executions"].includes(node["Relation Name"] ?? "") &&
      !(node.Partition !== undefined && (node["Rows Removed by Filter"] ?? 0) === 0),
  );
}

const indexesOf = (plan: PlanNode[]) => plan.map((node) => node["Index Name"]).filter((name) => name !== undefined);

/** The search statement for `filter` (first page of 50), with its values. */
function search(filter: JobFilter): [string, unknown[]] {
  const values: unknown[] = [];
  const checked = checkJobFilter(filter);
  const where = jobFilterCondition(checked, values);
  return [jobSearchStatement(t.schema, checked, where, `$${values.push(50)}`), values];
}

/** The capped count statement for `filter` (at most 10,001), with its values. */
function count(filter: JobFilter): [string, unknown[]] {
  const values: unknown[] = [];
  const where = jobFilterCondition(checkJobFilter(filter), values);
  return [jobCountStatement(t.schema, where, `$${values.push(10_001)}`), values];
}

/** A job id of the store, by its rank among ids (0 the oldest). */
async function idAt(rank: number): Promise<string> {
  const { rows } = await sql(t.conveyor, `SELECT id FROM {{schema}}.jobs ORDER BY id OFFSET ${rank} LIMIT 1`);
  return rows[0].id;
}

describe("searches", () => {
  it("by id prefix read a range of the primary key", async () => {
    const id = await idAt(123_456);
    for (const prefix of [id, id.slice(0, 13), id.replace(/-/g, "").slice(0, 10)]) {
      const plan = await executed(...search({ id: prefix }));
      expect(tableScans(plan), prefix).toEqual([]);
      const key = plan.find((node) => /^(jobs_live_pkey|jobs_dead_pkey|job_history_id_idx)$/.test(node["Index Name"] ?? ""));
      expect(key?.["Index Cond"], JSON.stringify(plan)).toMatch(/id >=/);
    }
  });

  it("of dead jobs read a small part of the table: the newest by key, or the dead jobs' index", async () => {
    // 1% of the jobs are dead: the newest 50 are found in a dead jobs' index (jobs_dead_idx, or jobs_dead_by_queue_idx for one queue).
    for (const filter of [{ status: "dead" }, { status: "dead", queue: "q13" }] as JobFilter[]) {
      const plan = await executed(...search(filter));
      expect(tableScans(plan), JSON.stringify(filter)).toEqual([]);
      expect(rowsRead(plan), JSON.stringify(plan)).toBeLessThan(JOBS / 10);
    }
    for (const plan of [await executed(...search({ status: "dead", queue: "q13" })), await executedCount(...count({ status: "dead", queue: "q13" }))]) {
      expect(indexesOf(plan).filter((index) => index.startsWith("jobs_dead")), JSON.stringify(plan)).not.toEqual([]);
    }
  });

  it("by payload read the opt-in GIN index once it exists", async () => {
    await sql(t.conveyor, "CREATE INDEX jobs_payload_idx ON {{schema}}.jobs USING gin (payload jsonb_path_ops)");
    await sql(t.conveyor, "ANALYZE {{schema}}.jobs");
    try {
      for (const filter of [{ payload: { customerId: 4242 } }, { payload: { customerId: 4242, plan: "pro" }, status: "succeeded" }] as JobFilter[]) {
        const plan = await executed(...search(filter));
        expect(tableScans(plan), JSON.stringify(filter)).toEqual([]);
        expect(indexesOf(plan), JSON.stringify(plan)).toContain("jobs_payload_idx");
        expect(indexesOf(await executedCount(...count(filter)))).toContain("jobs_payload_idx");
      }
    } finally {
      await sql(t.conveyor, "DROP INDEX {{schema}}.jobs_payload_idx");
    }
  });
});

describe("counts", () => {
  const filters: JobFilter[] = [
    {},
    { status: "succeeded" },
    { status: "queued" },
    { queue: "q3", status: "queued" },
    { queue: "q3", status: ["queued", "retrying"] },
    { status: "running" },
    { status: "waiting", tenant: "t4" },
    { kind: "k7", status: "retrying" },
    { status: "dead" },
    { createdAfter: new Date(Date.now() - 10 * 60_000) },
    { idempotencyKey: "none-such" },
  ];
  for (const filter of filters) {
    it(`${JSON.stringify(filter)}: never reads the jobs table through`, async () => {
      const plan = await executedCount(...count(filter));
      expect(tableScans(plan), JSON.stringify(plan)).toEqual([]);
      // Counting stops at the limit: what is read is the limit, and what the filter removes on the way (85% of jobs succeeded).
      expect(rowsRead(plan), JSON.stringify(plan)).toBeLessThanOrEqual(20_000);
    });
  }

  it("estimates read no rows at all", async () => {
    const values: unknown[] = [];
    const text = jobEstimateStatement(t.schema, jobFilterCondition(checkJobFilter({ error: "upstream 3" }), values));
    const { rows } = await client.query(text, values);
    expect(rows[0]["QUERY PLAN"][0].Plan["Plan Rows"]).toBeGreaterThan(0);
  });
});

describe("the overview's statements", () => {
  const q = () => bindQueries(t.schema);
  const statements = (): Array<[string, string, unknown[]]> => [
    ["queueCountsSmall", q().queueCountsSmall.text, [null, 10_000]],
    ["queueCountsSmall (a tenant)", q().queueCountsSmall.text, ["t3", 10_000]],
    ["queueCounts", q().queueCounts.text, [null, 1_001, t.schema]],
    ["queueCounts (a tenant)", q().queueCounts.text, ["t3", 1_001, t.schema]],
    ["queueEstimates", q().queueEstimates.text, [null, t.schema, 1_001]],
    ["queueEstimates (a tenant)", q().queueEstimates.text, ["t3", t.schema, 1_001]],
    ["queueReadyHeads", q().queueReadyHeads.text, [null, 1_000]],
    ["queueReadyHeads (a tenant)", q().queueReadyHeads.text, ["t3", 1_000]],
    ["jobLeaseExpiredList", q().jobLeaseExpiredList.text, [null, 1_001, 5]],
    ["statsRecentActivity", q().statsRecentActivity.text, [null, 15 * 60_000, 10]],
    ["statsRecentActivity (a tenant)", q().statsRecentActivity.text, ["t3", 15 * 60_000, 10]],
    ["workerListWithJobs", q().workerListWithJobs.text, [null]],
  ];

  it("never read the jobs table (or the attempts table) through", async () => {
    for (const [name, text, values] of statements()) {
      // The per-queue counts run through indexes (QueueStore), as counts do.
      const plan = name.startsWith("queueCounts ") || name === "queueCounts" || name.startsWith("queueEstimates") ? await executedCount(text, values) : await executed(text, values);
      expect(tableScans(plan), `${name}: ${JSON.stringify(tableScans(plan))}`).toEqual([]);
    }
  });

  it("count a big table's queues through the index by queue, state and tenant", async () => {
    for (const tenant of [null, "t3"]) {
      const plan = await executedCount(q().queueCounts.text, [tenant, 1_001, t.schema]);
      expect(indexesOf(plan), String(tenant)).toContain("job_history_by_queue_state_tenant_idx");
      expect(indexesOf(plan), String(tenant)).toContain("jobs_ready_by_queue_idx");
      // Far from the 200,000 rows: each queue's states are read up to 1,001 rows each.
      expect(rowsRead(plan), String(tenant)).toBeLessThan(JOBS);
    }
    // The small-table count stopped at its size test: 10,001 primary-key entries, and nothing else of jobs.
    const small = await executed(q().queueCountsSmall.text, [null, 10_000]);
    expect(small.filter((node) => node["Relation Name"] === "jobs").map((node) => node["Index Name"])).toEqual(
      expect.arrayContaining(["jobs_live_pkey"]),
    );
    // 10,001 entries in id order, merged from the partitions' id indexes (each read at most one entry past the merge's last).
    const read = small.filter((node) => node["Relation Name"] === "jobs").reduce((sum, node) => sum + (node["Actual Rows"] ?? 0), 0);
    expect(read).toBeGreaterThanOrEqual(10_001);
    expect(read).toBeLessThanOrEqual(10_001 + 12);
  });

  it("read the attempt window by primary key, each attempt's job by key, and the successes on history rows kind by kind", async () => {
    const plan = await executed(q().statsRecentActivity.text, [null, 15 * 60_000, 10]);
    const executions = plan.find((node) => node["Relation Name"] === "job_executions");
    expect(executions?.["Index Name"]).toBe("job_executions_pkey");
    const onJobs = plan.filter((node) => node["Relation Name"] === "jobs").map((node) => node["Index Name"] ?? node.Plans?.[0]?.["Index Name"] ?? node["Node Type"]);
    expect(onJobs).toContain("jobs_finished_by_kind_idx");
    for (const index of onJobs) expect(index, JSON.stringify(onJobs)).toMatch(/^(jobs_live_pkey|jobs_dead_pkey|job_history_id_idx|jobs_finished_by_kind_idx|job_history_\d+_kind_finished_at_idx)$/);
  });
});
