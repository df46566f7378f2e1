import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { NotFoundError } from "../packages/core/src/core/errors.js";
import { uuidv7 } from "../packages/core/src/core/ids.js";
import { createTestConveyor, type TestConveyor } from "./helpers/database.js";
import { allTestJobs, item } from "./helpers/jobs.js";

// Cancelling a running job (flag, then the handler's signal) is covered by the worker suite.
let test: TestConveyor;
beforeAll(async () => {
  test = await createTestConveyor({ jobs: allTestJobs });
});
afterAll(async () => {
  await test.cleanup();
});

describe("cancel", () => {
  it("cancels a queued job at once", async () => {
    const job = await test.conveyor.enqueue(item, { n: 1 });
    const { outcome, job: cancelled } = await test.conveyor.cancel(job.id);
    expect(outcome).toBe("cancelled");
    expect(cancelled).toMatchObject({ id: job.id, status: "cancelled" });
    expect(cancelled.finishedAt).toBeInstanceOf(Date);
    expect(await test.conveyor.getJob(job.id)).toMatchObject({ status: "cancelled" });
  });

  it("cancels a retrying job at once", async () => {
    const job = await test.conveyor.enqueue(item, { n: 2 });
    await test.conveyor.pool.query(`UPDATE "${test.schema}".jobs SET status = 'retrying', attempts = 1 WHERE id = $1`, [job.id]);
    expect((await test.conveyor.cancel(job.id)).outcome).toBe("cancelled");
  });

  it("leaves a terminal job as it is", async () => {
    const cancelled = await test.conveyor.enqueue(item, { n: 3 });
    await test.conveyor.cancel(cancelled.id);
    const again = await test.conveyor.cancel(cancelled.id);
    expect(again.outcome).toBe("already_terminal");
    expect(again.job.status).toBe("cancelled");

    const succeeded = await test.conveyor.enqueue(item, { n: 4 });
    await test.conveyor.pool.query(
      `UPDATE "${test.schema}".jobs SET status = 'succeeded', attempts = 1, finished_at = now() WHERE id = $1`,
      [succeeded.id],
    );
    const result = await test.conveyor.cancel(succeeded.id);
    expect(result.outcome).toBe("already_terminal");
    expect(result.job.status).toBe("succeeded");
    expect(result.job.cancelRequested).toBe(false);
  });

  it("throws NotFoundError for a missing job, and for another tenant's", async () => {
    await expect(test.conveyor.cancel(uuidv7())).rejects.toBeInstanceOf(NotFoundError);
    const job = await test.conveyor.enqueue(item, { n: 5 }, { tenant: "owner" });
    await expect(test.conveyor.cancel(job.id, { tenant: "someone-else" })).rejects.toBeInstanceOf(NotFoundError);
    expect(await test.conveyor.getJob(job.id)).toMatchObject({ status: "queued" });
  });
});
