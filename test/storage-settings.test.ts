import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestConveyor, storeOf, type TestConveyor } from "./helpers/database.js";

// Migration 007 leaves room on job_executions pages so that ending an
// attempt (no indexed column changes) is a HOT update: no index writes.
describe("storage settings", () => {
  let t: TestConveyor;

  beforeAll(async () => {
    t = await createTestConveyor();
  });

  afterAll(async () => {
    await t?.cleanup();
  });

  it("job_executions is created with fillfactor 50", async () => {
    const { rows } = await t.conveyor.pool.query(
      "SELECT c.reloptions FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relname = 'job_executions'",
      [t.schema],
    );
    expect(rows[0].reloptions).toEqual(["fillfactor=50"]);
  });

  it("ending an attempt leaves most executions on their page (HOT)", async () => {
    const { conveyor, schema } = t;
    await conveyor.pool.query(
      `INSERT INTO "${schema}".jobs (id, tenant, queue, kind, payload, max_attempts) SELECT gen_random_uuid(), 't', 'q', 'k', '{}', 1 FROM generate_series(1, 300)`,
    );
    const claimed = await storeOf(conveyor).jobClaim("w1", 300, ["k"], null, 60_000);
    expect(claimed).toHaveLength(300);
    const before = await conveyor.pool.query(`SELECT id, ctid::text AS ctid FROM "${schema}".job_executions ORDER BY id`);
    await storeOf(conveyor).jobComplete(claimed.map((job) => ({ jobId: job.id, executionId: job.executionId, result: null })));
    const after = await conveyor.pool.query(`SELECT id, ctid::text AS ctid, outcome FROM "${schema}".job_executions ORDER BY id`);
    expect(after.rows.every((row) => row.outcome === "succeeded")).toBe(true);
    // A HOT update puts the new version on the same page: the same block number in ctid (block,item).
    // 300 executions fill several pages; packed full (fillfactor 100) only the last page's rows stay.
    const page = (ctid: string) => ctid.slice(1).split(",")[0];
    const stayed = after.rows.filter((row, i) => page(row.ctid) === page(before.rows[i].ctid)).length;
    expect(stayed).toBeGreaterThanOrEqual(240);
  });
});
