import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freshExecutionIds } from "../../packages/core/src/store/execution-ids.js";
import { jobClaim } from "../../packages/core/src/store/sql/claims.js";
import { createTestConveyor, storeOf, type TestConveyor } from "../helpers/database.js";
import { sql } from "./support.js";

// The claim must walk the ready index in claim order and stop at its LIMIT
// whether or not the table has statistics yet. Before the first ANALYZE a
// plan that sorted every ready row took 860 ms at 1,000,000 waiting. The
// plan is read with EXPLAIN (no timing), so the test cannot flake on load.
const WAITING = 150_000;
const LIMIT = 200;

interface PlanNode {
  "Node Type": string;
  "Index Name"?: string;
  "Subplan Name"?: string;
  Plans?: PlanNode[];
}

function nodes(node: PlanNode): PlanNode[] {
  return [node, ...(node.Plans ?? []).flatMap(nodes)];
}

/** The plan of the CTE that picks the rows to claim. */
async function claimablePlan(t: TestConveyor): Promise<PlanNode> {
  const text = jobClaim.replaceAll("{{schema}}", `"${t.schema}"`);
  const { rows } = await t.conveyor.pool.query(`EXPLAIN (FORMAT JSON) ${text}`, ["w1", LIMIT, ["plan.a", "plan.b"], null, 60_000, freshExecutionIds(LIMIT, Date.now())]);
  const root = (rows[0]["QUERY PLAN"] as Array<{ Plan: PlanNode }>)[0]!.Plan;
  const cte = nodes(root).find((node) => node["Subplan Name"] === "CTE claimable");
  if (!cte) throw new Error(`no claimable CTE in the plan: ${JSON.stringify(root)}`);
  return cte;
}

describe("claim plan", () => {
  let t: TestConveyor;

  beforeAll(async () => {
    t = await createTestConveyor();
    // Keep autovacuum from analyzing the table behind the test's back.
    await sql(t.conveyor, "ALTER TABLE {{schema}}.jobs_live SET (autovacuum_enabled = false)");
    await sql(
      t.conveyor,
      `INSERT INTO {{schema}}.jobs (id, tenant, queue, kind, payload, max_attempts, priority)
       SELECT gen_random_uuid(), 't', 'default', CASE WHEN g % 2 = 0 THEN 'plan.a' ELSE 'plan.b' END, '{}', 3, (g % 3)::smallint
       FROM generate_series(1, $1::int) AS g`,
      [WAITING],
    );
  }, 120_000);

  afterAll(async () => {
    await t?.cleanup();
  });

  it("walks the ready index in claim order without sorting, before the table is analyzed", async () => {
    const { rows } = await sql(t.conveyor, "SELECT last_analyze, last_autoanalyze FROM pg_stat_user_tables WHERE schemaname = $1 AND relname = 'jobs'", [t.schema]);
    expect(rows[0]).toEqual({ last_analyze: null, last_autoanalyze: null });
    const plan = nodes(await claimablePlan(t));
    expect(plan.map((node) => node["Node Type"])).not.toContain("Sort");
    expect(plan.some((node) => node["Node Type"] === "Index Scan" && node["Index Name"] === "jobs_ready_idx")).toBe(true);
  });

  it("keeps that plan after ANALYZE", async () => {
    await sql(t.conveyor, "ANALYZE {{schema}}.jobs");
    const plan = nodes(await claimablePlan(t));
    expect(plan.map((node) => node["Node Type"])).not.toContain("Sort");
    expect(plan.some((node) => node["Node Type"] === "Index Scan" && node["Index Name"] === "jobs_ready_idx")).toBe(true);
  });

  it("claims the first jobs in priority order, only of the kinds asked for", async () => {
    const claimed = await storeOf(t.conveyor).jobClaim("w1", 50, ["plan.a"], null, 60_000);
    expect(claimed).toHaveLength(50);
    expect(claimed.every((job) => job.kind === "plan.a")).toBe(true);
    const priorities = await t.conveyor.pool.query<{ priority: number }>(
      `SELECT DISTINCT priority FROM "${t.schema}".jobs WHERE id = ANY($1::uuid[])`,
      [claimed.map((job) => job.id)],
    );
    expect(priorities.rows).toEqual([{ priority: 0 }]);
  });
});
