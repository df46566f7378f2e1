/**
 * The statements Conveyor prepares once per connection may run on a generic
 * plan, made without their values (queries.ts). Each one's generic plan is
 * checked here on a filled store, before and after ANALYZE: it reaches its
 * rows by key or through its partial index, never by a scan of a whole table
 * or a whole index. Every other statement is sent unnamed, and so planned for
 * its values at each call, but the worker's claim, prepared on a connection
 * of its own: for a worker over every queue, a claim whose generic plan is
 * checked here too (with the tenant index present, which once drew such a
 * plan into sorting every ready job); for one bound to named queues, planned
 * at every call.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defineJob } from "../packages/core/src/index.js";
import { uuidv7 } from "../packages/core/src/core/ids.js";
import type { ClaimStore } from "../packages/core/src/store/claim-store.js";
import { freshExecutionIds } from "../packages/core/src/store/execution-ids.js";
import { bindQueries } from "../packages/core/src/store/queries.js";
import { connectionOf, createTestConveyor, dbOf, storeOf, type TestConveyor } from "./helpers/database.js";
import { genericPlan as planOf, type PlanNode } from "./helpers/query-plans.js";
import { emptyPayload, silent, sql } from "./worker/support.js";

const noop = defineJob({ kind: "noop", schema: emptyPayload, handler: () => {} });
const WAITING = 20_000;
const FINISHED = 20_000;
const HELD = 200;

let t: TestConveyor;
/** Jobs claimed by worker "w" and their execution ids, for the statements about running jobs. */
let held: { jobIds: string[]; executionIds: string[] };

/** The scans of a statement's generic plan on this file's store. */
const genericPlan = (name: string, text: string, values: unknown[]) => planOf(t.conveyor.pool, name, text, values);

beforeAll(async () => {
  t = await createTestConveyor({ jobs: [noop], logger: silent });
  const { conveyor } = t;
  // The index a fair claim builds, made while the table was empty (building an
  // index on a full table refreshes its row estimate, as ANALYZE does): present,
  // it drew a plan made without the values into reading and sorting every
  // ready job for jobClaim.
  await dbOf(conveyor).tenantIndexEnsure();
  for (let start = 0; start < WAITING; start += 5_000) {
    await conveyor.enqueueMany(Array.from({ length: 5_000 }, () => ({ job: noop, payload: {}, queue: "deep" })));
  }
  await conveyor.enqueueMany(Array.from({ length: 50 }, () => ({ job: noop, payload: {}, queue: "small" })));
  await sql(
    conveyor,
    `WITH finished AS (
       INSERT INTO {{schema}}.jobs (id, tenant, queue, kind, payload, status, attempts, max_attempts, run_at, started_at, finished_at)
       SELECT {{schema}}.uuid_v7(), 'default', 'deep', 'noop', '{}', 'succeeded', 1, 3, now(), now(), now()
       FROM generate_series(1, ${FINISHED})
       RETURNING id)
     INSERT INTO {{schema}}.job_executions (id, job_id, attempt, worker_id, finished_at, outcome)
     SELECT {{schema}}.uuid_v7(), id, 1, 'filler', now(), 'succeeded' FROM finished`,
  );
  const claimed = await storeOf(conveyor).jobClaim("w", HELD, ["noop"], null, 60_000);
  held = { jobIds: claimed.map((job) => job.id), executionIds: claimed.map((job) => job.executionId) };
}, 60_000);

afterAll(() => t?.cleanup());

/** Representative values for every statement prepared once; the test below fails for one missing here. */
function valuesFor(schema: string): Record<string, unknown[]> {
  const rows = 100;
  const ids = Array.from({ length: rows }, () => uuidv7());
  const channel = `${schema}:jobs`;
  const one = [uuidv7(), "default", "deep", "noop", "{}", 0, 3, null, null];
  const many = [ids, ids.map(() => "default"), ids.map(() => "deep"), ids.map(() => "noop"), ids.map(() => "{}"), ids.map(() => 0), ids.map(() => 3)];
  const { jobIds, executionIds } = held;
  return {
    jobInsert: [...one, "key-1", false, channel, null, "host-1"],
    jobInsertKeyless: [...one, null, false, channel, null, null],
    jobInsertMany: [...many, null, null, ids.map((id) => `key-${id}`), false, null, null],
    jobInsertManyKeyless: [...many, null, null, null, false, null, ids.map((id) => `host-${id}`)],
    queuesWake: [channel, ["deep"]],
    jobHeartbeat: [jobIds, executionIds, 60_000],
    jobComplete: [jobIds, executionIds, jobIds.map(() => null), jobIds.map(() => true)],
    jobEndAttempts: [jobIds, executionIds, jobIds.map(() => "failed"), jobIds.map(() => null), jobIds.map(() => 1_000), jobIds.map(() => "attempt_failed")],
    jobLockExpired: [100],
    jobEndExpired: [
      jobIds, executionIds, jobIds.map(() => false), jobIds.map(() => "lease_expired"), jobIds.map(() => "lease_expired"),
      jobIds.map(() => '{"name":"LeaseExpired","message":"lease expired on worker w"}'), jobIds.map(() => 0),
    ],
  };
}

/** Partial indexes that hold only the rows a statement wants: walking one in order is the plan. */
// key_limits_queues_idx holds only the key-limited queues' default rows (migration 016), which the claims' InitPlan reads whole.
const WALKED_PARTIAL_INDEXES = new Set(["jobs_ready_idx", "jobs_running_lease_idx", "key_limits_queues_idx"]);

/** Scans of jobs or job_executions that read a whole table, or a whole index not meant to be walked. */
function wholeScans(nodes: PlanNode[]): PlanNode[] {
  return nodes.filter((node) => {
    if (node["Relation Name"] !== undefined && !["jobs", "job_executions"].includes(node["Relation Name"])) return false;
    if (node["Node Type"] === "Seq Scan") return true;
    if (node["Node Type"] === "Bitmap Heap Scan") return false; // its Bitmap Index Scan child is checked
    const index = node["Index Name"];
    return index !== undefined && node["Index Cond"] === undefined && !WALKED_PARTIAL_INDEXES.has(index);
  });
}

describe("statements prepared once per connection", () => {
  it("are exactly the ones with representative values here", () => {
    const named = Object.entries(bindQueries(t.schema))
      .filter(([, query]) => query.prepared)
      .map(([name]) => name)
      .sort();
    expect(named).toEqual(Object.keys(valuesFor(t.schema)).sort());
  });

  for (const stats of ["before ANALYZE", "after ANALYZE"] as const) {
    it(`reach their rows by key or through their partial index on a generic plan, ${stats}`, async () => {
      if (stats === "after ANALYZE") await sql(t.conveyor, "ANALYZE {{schema}}.jobs, {{schema}}.job_executions");
      const queries = bindQueries(t.schema);
      // With them, the claim a worker over every queue prepares on its own connection (claim-store.ts).
      const claimValues = ["w2", 100, ["noop"], null, 60_000, freshExecutionIds(100, Date.now())];
      const statements = {
        ...valuesFor(t.schema),
        jobClaimAllQueues: claimValues,
        jobClaimAllQueuesAfter: [...claimValues, 0, new Date().toISOString(), "01890a5d-ac96-774b-bcce-b302099a8057"],
      };
      for (const [name, values] of Object.entries(statements)) {
        const nodes = await genericPlan(name, queries[name as keyof typeof queries].text, values);
        expect(wholeScans(nodes), `${name} ${stats}: ${JSON.stringify(nodes)}`).toEqual([]);
        if (name === "jobClaimAllQueues") expect(nodes.map((node) => node["Index Name"]), JSON.stringify(nodes)).toContain("jobs_ready_idx");
        if (name === "jobClaimAllQueuesAfter") {
          // The cursor starts the index scan: entries before it are never read.
          const ready = nodes.find((node) => node["Index Name"] === "jobs_ready_idx");
          expect(String(ready?.["Index Cond"]), JSON.stringify(nodes)).toMatch(/ROW\(priority, run_at, id\) > ROW\(/);
        }
        if (name === "jobLockExpired") expect(nodes.map((node) => node["Index Name"])).toContain("jobs_running_lease_idx");
      }
    });
  }
});

describe("statements planned for their values", () => {
  /** The names of the statements `work` sends on `pool` (undefined: unnamed). */
  async function namesSent(work: () => Promise<unknown>, pool: unknown = t.conveyor.pool): Promise<Array<string | undefined>> {
    const spied = pool as { query: (...args: unknown[]) => unknown };
    const original = spied.query;
    const names: Array<string | undefined> = [];
    spied.query = function (this: unknown, ...args: unknown[]) {
      names.push(typeof args[0] === "object" ? (args[0] as { name?: string }).name : undefined);
      return original.apply(this, args);
    };
    try {
      await work();
    } finally {
      spied.query = original;
    }
    return names;
  }

  for (const [queues, statement, mode] of [
    [["small"], "jobClaim", "force_custom_plan"],
    [null, "jobClaimAllQueues", "force_generic_plan"],
  ] as const) {
    it(`a worker ${queues ? "bound to named queues" : "over every queue"} prepares ${statement} on a connection of its own, planned with ${mode}`, async () => {
      const claims = dbOf(t.conveyor).claimStoreOpen(connectionOf(t.conveyor), queues);
      try {
        const names = await namesSent(() => claims.jobClaim("w3", 1, ["noop"], queues, 60_000), claims.pool);
        expect(names).toEqual([bindQueries(t.schema)[statement].name]);
        const { rows } = await claims.pool.query("SELECT current_setting('plan_cache_mode') AS mode, current_setting('application_name') AS app");
        expect(rows[0]).toEqual({ mode, app: "conveyor-claims" });
      } finally {
        await claims.close();
      }
    });
  }

  it("a claim on Conveyor's pool is sent unnamed", async () => {
    expect(await namesSent(() => storeOf(t.conveyor).jobClaim("w3", 1, ["noop"], null, 60_000))).toEqual([undefined]);
  });

  it("statements with optional filters are sent unnamed", async () => {
    const names = await namesSent(async () => {
      await t.conveyor.listJobs({ status: "queued", limit: 5 });
      await t.conveyor.getJob(held.jobIds[0]!);
    });
    expect(names.length).toBeGreaterThan(0);
    expect(names.filter((name) => name !== undefined)).toEqual([]);
  });
});
