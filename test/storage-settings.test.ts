import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestConveyor, storeOf, type TestConveyor } from "./helpers/database.js";

// A running attempt lives on its job row; an attempt that does not end its
// job successfully is inserted into job_executions once, finished, by the
// statement that ends it, and one that does stays on the job's history row.
// So the table is insert-only on a job's way and its pages are packed full.
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

  it("a claim writes no execution row; a success keeps its attempt on the history row, and a failure inserts its row finished", async () => {
    const { conveyor, schema } = t;
    await conveyor.pool.query(
      `INSERT INTO "${schema}".jobs (id, tenant, queue, kind, payload, max_attempts) SELECT gen_random_uuid(), 't', 'q', 'k', '{}', 1 FROM generate_series(1, 300)`,
    );
    const claimed = await storeOf(conveyor).jobClaim("w1", 300, ["k"], null, 60_000);
    expect(claimed).toHaveLength(300);
    const count = async (from: string) => (await conveyor.pool.query(`SELECT count(*)::int AS n FROM "${schema}".${from}`)).rows[0].n;
    expect(await count("job_executions")).toBe(0);
    expect(await count("job_attempts WHERE outcome = 'running' AND worker_id = 'w1'")).toBe(300);
    const [failing, ...succeeding] = claimed;
    await storeOf(conveyor).jobComplete(succeeding.map((job) => ({ jobId: job.id, executionId: job.executionId, result: null })));
    expect(await count("job_executions")).toBe(0);
    const { rows } = await conveyor.pool.query(
      `SELECT id, job_id, outcome, worker_id, attempt, finished_at IS NOT NULL AS finished FROM "${schema}".job_attempts ORDER BY id`,
    );
    const ended = rows.filter((row) => row.outcome !== "running");
    expect(ended.map((row) => row.id).sort()).toEqual(succeeding.map((job) => job.executionId).sort());
    expect(ended.every((row) => row.outcome === "succeeded" && row.worker_id === "w1" && row.attempt === 1 && row.finished)).toBe(true);
    // Read as a record of the attempt, not a hold: the job is no worker's.
    const job = await conveyor.getJob(succeeding[0]!.id);
    expect(job).toMatchObject({ status: "succeeded", lockedBy: null, currentExecutionId: null });

    await storeOf(conveyor).jobEndAttempts([
      { jobId: failing!.id, executionId: failing!.executionId, outcome: "failed", error: null, event: "attempts_exhausted", delayMs: 0 },
    ]);
    const { rows: recorded } = await conveyor.pool.query(
      `SELECT id, outcome, worker_id, finished_at IS NOT NULL AS finished, xmax::text AS xmax FROM "${schema}".job_executions`,
    );
    // xmax 0: no later version, no lock; the row is as the statement that ended the attempt inserted it.
    expect(recorded).toEqual([{ id: failing!.executionId, outcome: "failed", worker_id: "w1", finished: true, xmax: "0" }]);
    expect(await count("job_attempts")).toBe(300);
  });
});
