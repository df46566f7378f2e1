import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestConveyor, storeOf, type TestConveyor } from "./helpers/database.js";

// A running attempt lives on its job row; its job_executions row is inserted
// once, finished, by the statement that ends it (migration 019). So the table
// is insert-only on a job's way and its pages are packed full.
describe("storage settings", () => {
  let t: TestConveyor;

  beforeAll(async () => {
    t = await createTestConveyor();
  });

  afterAll(async () => {
    await t?.cleanup();
  });

  it("job_executions is packed full (fillfactor 100)", async () => {
    const { rows } = await t.conveyor.pool.query(
      "SELECT c.reloptions FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relname = 'job_executions'",
      [t.schema],
    );
    expect(rows[0].reloptions).toEqual(["fillfactor=100"]);
  });

  it("a claim writes no execution row; the completion inserts each one finished, never updated", async () => {
    const { conveyor, schema } = t;
    await conveyor.pool.query(
      `INSERT INTO "${schema}".jobs (id, tenant, queue, kind, payload, max_attempts) SELECT gen_random_uuid(), 't', 'q', 'k', '{}', 1 FROM generate_series(1, 300)`,
    );
    const claimed = await storeOf(conveyor).jobClaim("w1", 300, ["k"], null, 60_000);
    expect(claimed).toHaveLength(300);
    const count = async (from: string) => (await conveyor.pool.query(`SELECT count(*)::int AS n FROM "${schema}".${from}`)).rows[0].n;
    expect(await count("job_executions")).toBe(0);
    expect(await count("job_attempts WHERE outcome = 'running' AND worker_id = 'w1'")).toBe(300);
    await storeOf(conveyor).jobComplete("w1", claimed.map((job) => ({ jobId: job.id, executionId: job.executionId, result: null })));
    const { rows } = await conveyor.pool.query(
      `SELECT id, outcome, worker_id, attempt, finished_at IS NOT NULL AS finished, xmax::text AS xmax FROM "${schema}".job_executions ORDER BY id`,
    );
    expect(rows.map((row) => row.id).sort()).toEqual(claimed.map((job) => job.executionId).sort());
    // xmax 0: no later version, no lock; the row is as the completion inserted it.
    expect(rows.every((row) => row.outcome === "succeeded" && row.worker_id === "w1" && row.attempt === 1 && row.finished && row.xmax === "0")).toBe(true);
    expect(await count("job_attempts")).toBe(300);
  });
});
