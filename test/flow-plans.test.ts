/**
 * Waiting jobs cost the claim nothing, and releasing dependents costs their
 * number, not the number of jobs waiting. On a store of 20,010 `waiting`
 * jobs (children of 21 running parents) beside 200 ready ones:
 *
 * - each of the worker's claims (named queues, every queue, fair, limited)
 *   reads jobs only through the ready indexes (partial on queued and
 *   retrying), so it never reads a waiting row: its generic or custom plan
 *   names a ready index and scans no whole table, and, run for real in a
 *   transaction rolled back, it fetches no more rows of `jobs` than it
 *   claims, plus a few (pg_stat_xact_user_tables, which counts the rows a
 *   transaction read, by sequential and by index scans);
 * - completing a parent of 1,000 (and one of 10) runs the release trigger
 *   in the completion's statement; its reads and writes of `jobs`,
 *   `job_dependencies` and `job_dependency_state`, counted the same way,
 *   are a few per child and never a sequential scan; and where the server
 *   lets the session load auto_explain, the plan of every statement inside
 *   the trigger reads those tables by key only.
 */
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defineJob, flowJob, type FlowJob } from "../packages/core/src/index.js";
import { CLAIM_LOCK_TIMEOUT_MS } from "../packages/core/src/core/defaults.js";
import { textArray } from "../packages/core/src/store/array-literals.js";
import { freshExecutionIds } from "../packages/core/src/store/execution-ids.js";
import { bindQueries } from "../packages/core/src/store/queries.js";
import { createTestConveyor, dbOf, storeOf, type TestConveyor } from "./helpers/database.js";
import { genericPlan, type PlanNode, scans } from "./helpers/query-plans.js";
import { emptyPayload, silent, sql } from "./worker/support.js";

const noop = defineJob({ kind: "noop", schema: emptyPayload, handler: () => {} });
const PARENTS = 20;
const CHILDREN = 1_000;
const SMALL = 10;
const READY = 200;
const CLAIM = 50;
const TABLES = ["jobs", "job_dependencies", "job_dependency_state"] as const;
/** Rows a release may read per child in each table (3 to 4 were measured on PostgreSQL 15 and 18). */
const READS_PER_CHILD = 5;

let t: TestConveyor;
/** The running parents: 20 of 1,000 children each, and one of 10. */
let big: { jobId: string; executionId: string };
let small: { jobId: string; executionId: string };

beforeAll(async () => {
  t = await createTestConveyor({ jobs: [noop], logger: silent });
  const { conveyor } = t;
  await dbOf(conveyor).tenantIndexEnsure();
  const jobs: Record<string, FlowJob> = {};
  for (let p = 0; p < PARENTS; p++) {
    jobs[`p${p}`] = flowJob(noop, {}, { queue: "parents" });
    for (let c = 0; c < CHILDREN; c++) jobs[`p${p}.${c}`] = flowJob(noop, {}, { queue: "deep", dependsOn: [`p${p}`] });
  }
  jobs["small"] = flowJob(noop, {}, { queue: "parents" });
  for (let c = 0; c < SMALL; c++) jobs[`small.${c}`] = flowJob(noop, {}, { queue: "deep", dependsOn: ["small"] });
  const flow = await conveyor.flows.enqueue({ jobs });
  await conveyor.enqueueMany(Array.from({ length: READY }, () => ({ job: noop, payload: {}, queue: "ready" })));
  await conveyor.queues.setLimits("limited", { concurrency: 100 });
  await conveyor.enqueueMany(Array.from({ length: READY }, () => ({ job: noop, payload: {}, queue: "limited" })));
  // The parents run, so that completing one is the worker's own statement.
  const claimed = await storeOf(conveyor).jobClaim("w", PARENTS + 1, ["noop"], ["parents"], 600_000);
  expect(claimed).toHaveLength(PARENTS + 1);
  const held = (name: string) => {
    const job = claimed.find((c) => c.id === flow.jobs[name]!.id)!;
    return { jobId: job.id, executionId: job.executionId };
  };
  big = held("p0");
  small = held("small");
  const { rows } = await sql(conveyor, "SELECT status, count(*)::int AS n FROM {{schema}}.jobs GROUP BY status ORDER BY status");
  expect(rows).toEqual([
    { status: "queued", n: 2 * READY },
    { status: "running", n: PARENTS + 1 },
    { status: "waiting", n: PARENTS * CHILDREN + SMALL },
  ]);
}, 120_000);

afterAll(() => t?.cleanup());

type TableCounts = Record<(typeof TABLES)[number], { seqScans: number; seqRead: number; indexFetched: number; inserted: number; updated: number }>;

/** What this transaction has read and written in the three tables so far. */
async function transactionCounts(client: pg.PoolClient): Promise<TableCounts> {
  const { rows } = await client.query(
    // The partitions of jobs (jobs_live, jobs_dead, history's days) counted as the one table.
    `SELECT * FROM (
       SELECT coalesce((SELECT r.relname FROM pg_class AS r WHERE r.oid = pg_partition_root(s.relid)), s.relname) AS relname,
              sum(seq_scan)::int AS "seqScans", sum(seq_tup_read)::int AS "seqRead", sum(coalesce(idx_tup_fetch, 0))::int AS "indexFetched",
              sum(n_tup_ins)::int AS inserted, sum(n_tup_upd)::int AS updated
         FROM pg_stat_xact_user_tables AS s WHERE schemaname = $1 GROUP BY 1) AS t
      WHERE relname = ANY($2::text[])`,
    [t.schema, TABLES],
  );
  return Object.fromEntries(TABLES.map((name) => {
    const { relname: _, ...counts } = rows.find((row) => row.relname === name) ?? { seqScans: 0, seqRead: 0, indexFetched: 0, inserted: 0, updated: 0 };
    return [name, counts];
  })) as TableCounts;
}

/** Run `text` in a transaction that is rolled back; returns its rows and what it read and wrote (the counts before it subtracted). */
async function measured(text: string, values: unknown[], setup: string[] = []): Promise<{ rows: unknown[]; counts: TableCounts; notices: string[] }> {
  const client = await t.conveyor.pool.connect();
  const notices: string[] = [];
  const onNotice = (notice: { message?: string }) => notices.push(notice.message ?? "");
  client.on("notice", onNotice);
  try {
    await client.query("BEGIN");
    for (const statement of setup) await client.query(statement);
    const before = await transactionCounts(client);
    const { rows } = await client.query(text, values);
    // Dependents are released when the transaction commits (migration 014); run that now, inside it.
    await client.query("SET CONSTRAINTS ALL IMMEDIATE");
    const after = await transactionCounts(client);
    const counts = Object.fromEntries(
      TABLES.map((name) => [name, Object.fromEntries(Object.entries(after[name]).map(([key, n]) => [key, n - before[name][key as keyof TableCounts["jobs"]]]))]),
    ) as TableCounts;
    return { rows, counts, notices };
  } finally {
    await client.query("ROLLBACK").catch(() => {});
    client.off("notice", onNotice);
    client.release();
  }
}

/** Scans of jobs, job_dependencies or job_dependency_state that read a whole table, or a whole index other than a ready one. */
function wholeScans(nodes: PlanNode[]): PlanNode[] {
  return nodes.filter((node) => {
    if (node["Relation Name"] !== undefined && !(TABLES as readonly string[]).includes(node["Relation Name"])) return false;
    if (node["Node Type"] === "Seq Scan") return true;
    if (node["Node Type"] === "Bitmap Heap Scan") return false; // its Bitmap Index Scan child is checked
    const index = node["Index Name"];
    // key_limits_queues_idx holds only the key-limited queues' default rows, which the claims read whole (migration 016).
    return index !== undefined && node["Index Cond"] === undefined && !index.startsWith("jobs_ready") && index !== "key_limits_queues_idx";
  });
}

for (const stats of ["before ANALYZE", "after ANALYZE"] as const) {
  describe(`with 20,010 waiting jobs, ${stats}`, () => {
    beforeAll(async () => {
      if (stats === "after ANALYZE") await sql(t.conveyor, "ANALYZE {{schema}}.jobs, {{schema}}.job_dependencies, {{schema}}.job_dependency_state");
    });

    const claims = () => {
      const q = bindQueries(t.schema);
      const ids = () => freshExecutionIds(CLAIM, Date.now());
      return {
        // Planned for its values at each call (a worker bound to named queues).
        jobClaim: { text: q.jobClaim.text, values: ["w2", CLAIM, ["noop"], ["ready", "deep"], 60_000, ids()], generic: false },
        // Prepared once on the claim connection, run on its generic plan (a worker over every queue).
        jobClaimAllQueues: { text: q.jobClaimAllQueues.text, values: ["w2", CLAIM, ["noop"], null, 60_000, ids()], generic: true },
        jobClaimFair: { text: q.jobClaimFair.text, values: ["w2", CLAIM, ["noop"], null, 60_000, ids(), CLAIM_LOCK_TIMEOUT_MS], generic: false },
        jobClaimFromLimitedQueue: { text: q.jobClaimFromLimitedQueue.text, values: ["w2", CLAIM, ["noop"], "limited", 60_000, ids(), CLAIM_LOCK_TIMEOUT_MS], generic: false },
      };
    };

    it("the claims reach jobs through the ready indexes, never a waiting row", async () => {
      for (const [name, claim] of Object.entries(claims())) {
        if (name === "jobClaim" || name === "jobClaimAllQueues") {
          const nodes = claim.generic
            ? await genericPlan(t.conveyor.pool, name, claim.text, claim.values)
            : await customPlan(claim.text, claim.values);
          expect(wholeScans(nodes), `${name}: ${JSON.stringify(nodes)}`).toEqual([]);
          const onJobs = nodes.filter((node) => node["Relation Name"] === "jobs" || node["Index Name"]?.startsWith("jobs_"));
          expect(onJobs.some((node) => node["Index Name"]?.startsWith("jobs_ready")), `${name}: ${JSON.stringify(nodes)}`).toBe(true);
          expect(onJobs.map((node) => node["Index Name"]), name).not.toContain("jobs_waiting_idx");
        }
        // The two function claims plan inside PL/pgSQL; what they read is counted instead, as for all four.
        const { rows, counts } = await measured(claim.text, claim.values);
        expect(rows.length, name).toBe(CLAIM);
        expect(counts.jobs.seqScans, name).toBe(0);
        // At most the ready rows (200 in "ready", 200 in "limited") and the claimed ones again: none of the 20,010 waiting.
        expect(counts.jobs.indexFetched, `${name}: ${JSON.stringify(counts.jobs)}`).toBeLessThanOrEqual(2 * READY + CLAIM + 10);
        expect(counts.jobs.updated, name).toBe(CLAIM);
      }
    });

    it("completing a parent releases its 1,000 children reading and writing only them", async () => {
      const complete = bindQueries(t.schema).jobComplete.text;
      const release = async (parent: { jobId: string; executionId: string }) =>
        measured(complete, [textArray([parent.jobId]), textArray([parent.executionId]), textArray([null]), "{t}"]);
      for (const [parent, children] of [[big, CHILDREN], [small, SMALL]] as const) {
        const { rows, counts } = await release(parent);
        expect(rows).toHaveLength(1);
        const report = JSON.stringify(counts);
        for (const table of TABLES) expect(counts[table].seqScans, `${table}: ${report}`).toBe(0);
        // The parent and each child written once: the parent by its move into history, each child in place.
        expect(counts.jobs.inserted, report).toBe(1);
        expect(counts.jobs.updated, report).toBe(children);
        // Rows read per child, in each table: its edge, its state row, its job row, each reached a few times
        // (found, locked, counted, settled); never a scan of the 20,010 waiting.
        for (const table of TABLES) expect(counts[table].indexFetched, `${table}: ${report}`).toBeLessThanOrEqual(READS_PER_CHILD * children + 10);
        expect(counts.job_dependency_state.updated, report).toBe(children);
      }
      // And the children are queued by then: what the worker's claim reads next.
      const client = await t.conveyor.pool.connect();
      try {
        await client.query("BEGIN");
        await client.query(complete, [textArray([big.jobId]), textArray([big.executionId]), textArray([null]), "{t}"]);
        await client.query("SET CONSTRAINTS ALL IMMEDIATE");
        const { rows } = await client.query(
          `SELECT j.status, count(*)::int AS n FROM "${t.schema}".job_dependencies AS d JOIN "${t.schema}".jobs AS j ON j.id = d.job_id
            WHERE d.depends_on = $1 GROUP BY j.status`,
          [big.jobId],
        );
        expect(rows).toEqual([{ status: "queued", n: CHILDREN }]);
      } finally {
        await client.query("ROLLBACK");
        client.release();
      }
    });

    it("every statement inside the release trigger reads by key (auto_explain, where the server allows LOAD)", async (context) => {
      const complete = bindQueries(t.schema).jobComplete.text;
      let result: Awaited<ReturnType<typeof measured>>;
      try {
        result = await measured(complete, [textArray([big.jobId]), textArray([big.executionId]), textArray([null]), "{t}"], [
          "LOAD 'auto_explain'",
          "SET LOCAL auto_explain.log_min_duration = 0",
          "SET LOCAL auto_explain.log_analyze = on",
          "SET LOCAL auto_explain.log_nested_statements = on",
          "SET LOCAL auto_explain.log_format = json",
          "SET LOCAL auto_explain.log_level = notice",
          "SET LOCAL client_min_messages = notice",
        ]);
      } catch (error) {
        if (/permission denied|access to library|could not access file/i.test((error as Error).message)) {
          context.skip(`auto_explain cannot be loaded here: ${(error as Error).message}`);
        }
        throw error;
      }
      const plans = result.notices.flatMap((message) => {
        const at = message.indexOf("{");
        return at < 0 ? [] : [JSON.parse(message.slice(at)) as { "Query Text": string; Plan: PlanNode }];
      });
      const nested = plans.filter((plan) => plan["Query Text"] !== complete);
      expect(nested.length, "statements logged inside the trigger").toBeGreaterThanOrEqual(4);
      const broad: string[] = [];
      for (const plan of plans) {
        const statement = plan["Query Text"].replace(/\s+/g, " ").slice(0, 120);
        for (const node of scans(plan.Plan)) {
          const touched = ((node["Actual Rows"] ?? 0) + (node["Rows Removed by Filter"] ?? 0)) * (node["Actual Loops"] ?? 1);
          const onOurs = (TABLES as readonly string[]).includes(node["Relation Name"] ?? "");
          if (wholeScans([node]).length > 0 || (onOurs && touched > CHILDREN + 1)) {
            broad.push(`${node["Node Type"]} on ${node["Relation Name"] ?? node["Index Name"]} (${touched} rows) in: ${statement}`);
          }
        }
      }
      expect(broad).toEqual([]);
    });
  });
}

/** The scans of `text`'s plan for these values (a custom plan, as an unnamed statement gets). */
async function customPlan(text: string, values: unknown[]): Promise<PlanNode[]> {
  const client = await t.conveyor.pool.connect();
  try {
    const { rows } = await client.query(`EXPLAIN (FORMAT JSON) ${text}`, values);
    return scans(rows[0]["QUERY PLAN"][0].Plan);
  } finally {
    client.release();
  }
}
