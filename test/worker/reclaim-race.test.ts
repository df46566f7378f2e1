import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Conveyor, defineJob } from "../../packages/core/src/index.js";
import { JobStore } from "../../packages/core/src/store/job-store.js";
import { bindQueries } from "../../packages/core/src/store/queries.js";
import { createTestConveyor, storeOf } from "../helpers/database.js";
import { waitFor } from "../helpers/wait-for.js";
import { emptyPayload, silent, sql } from "./support.js";

const noop = defineJob({ kind: "noop", schema: emptyPayload, maxAttempts: 2, handler: () => {} });

/**
 * The reclaim sweep against the writes it races. Pause points are real
 * transactions held open on their own connection: the "other worker" has
 * written but not committed when the sweep runs, then commits.
 */
describe("reclaim sweep races", () => {
  let conveyor: Conveyor;
  let cleanup: () => Promise<void>;
  beforeAll(async () => {
    ({ conveyor, cleanup } = await createTestConveyor({ jobs: [noop], logger: silent }));
  });
  afterAll(() => cleanup());

  const expireAll = () => sql(conveyor, `UPDATE {{schema}}.jobs SET lease_expires_at = now() - interval '1 second' WHERE status = 'running'`);

  /** Claim one job, and end its lease in the database: as if its worker had stopped renewing it. */
  async function claimExpired() {
    const { id } = await conveyor.enqueue(noop, {});
    const [job] = await storeOf(conveyor).jobClaim("racer", 1, ["noop"], null, 60_000);
    expect(job!.id).toBe(id);
    await sql(conveyor, `UPDATE {{schema}}.jobs SET lease_expires_at = now() - interval '1 second' WHERE id = $1`, [id]);
    return job!;
  }

  it("never touches a job whose completion is in flight, and the completion wins", async () => {
    const job = await claimExpired();
    const other = await conveyor.pool.connect();
    try {
      await other.query("BEGIN");
      const schema = conveyor.options.schema;
      const written = await new JobStore(other, bindQueries(schema), schema).jobComplete([
        { jobId: job.id, executionId: job.executionId, result: null },
      ]);
      expect(written.size).toBe(1);
      // Pause point: the completion is written, not committed. The sweep runs now.
      expect(await storeOf(conveyor).jobReclaimExpired(100)).toHaveLength(0);
      await other.query("COMMIT");
    } finally {
      other.release();
    }
    expect(await storeOf(conveyor).jobReclaimExpired(100)).toHaveLength(0);
    const after = await conveyor.getJob(job.id);
    expect(after!.status).toBe("succeeded");
    expect(after!.executions.map((e) => e.outcome)).toEqual(["succeeded"]); // the sweep wrote no lease_expired
  });

  it("never touches a job whose lease is being renewed, and the renewal wins", async () => {
    const job = await claimExpired();
    const other = await conveyor.pool.connect();
    try {
      await other.query("BEGIN");
      await other.query(
        `UPDATE "${conveyor.options.schema}".jobs SET lease_expires_at = now() + interval '1 minute' WHERE id = $1 AND current_execution_id = $2`,
        [job.id, job.executionId],
      );
      expect(await storeOf(conveyor).jobReclaimExpired(100)).toHaveLength(0);
      await other.query("COMMIT");
    } finally {
      other.release();
    }
    expect(await storeOf(conveyor).jobReclaimExpired(100)).toHaveLength(0);
    expect((await conveyor.getJob(job.id))!).toMatchObject({ status: "running", currentExecutionId: job.executionId });
    await storeOf(conveyor).jobComplete([{ jobId: job.id, executionId: job.executionId, result: null }]);
  });

  it("a completion sent while a sweep holds the job waits for it, then is fenced: the sweep's decision stands", async () => {
    const job = await claimExpired();
    const sweep = await conveyor.pool.connect();
    try {
      await sweep.query("BEGIN");
      // Pause point: the sweep has locked the row, decided and applied, not committed.
      const swept = await storeOf(conveyor).jobReclaimExpired(100, sweep);
      expect(swept.map((moved) => [moved.id, moved.status])).toEqual([[job.id, "retrying"]]);
      const completion = storeOf(conveyor).jobComplete([{ jobId: job.id, executionId: job.executionId, result: null }]);
      const schema = conveyor.options.schema;
      await waitFor("the completion to wait on the sweep's row lock", async () => {
        const { rows } = await conveyor.pool.query(
          `SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%status = ''succeeded''%' AND position($1 IN query) > 0`,
          [`"${schema}".jobs`],
        );
        return rows.length > 0;
      }, 10_000, 10);
      await sweep.query("COMMIT");
      expect((await completion).size).toBe(0);
    } finally {
      sweep.release();
    }
    const after = await conveyor.getJob(job.id);
    expect(after).toMatchObject({ status: "retrying", attempts: 1 });
    expect(after!.executions.map((e) => e.outcome)).toEqual(["lease_expired"]);
    await conveyor.cancel(job.id);
  });

  it("a re-claimed job is not reclaimed under its new owner", async () => {
    const job = await claimExpired();
    expect(await storeOf(conveyor).jobReclaimExpired(100)).toHaveLength(1);
    const [again] = await storeOf(conveyor).jobClaim("second-owner", 1, ["noop"], null, 60_000);
    expect(again!.id).toBe(job.id);
    expect(await storeOf(conveyor).jobReclaimExpired(100)).toHaveLength(0);
    // The first owner's late completion or failure is fenced: it writes nothing, no execution record either.
    const executionRows = async () =>
      (await sql(conveyor, `SELECT count(*)::int AS n FROM {{schema}}.job_executions WHERE job_id = $1`, [job.id])).rows[0].n;
    expect(await executionRows()).toBe(1); // the reclaimed attempt's
    expect((await storeOf(conveyor).jobComplete([{ jobId: job.id, executionId: job.executionId, result: null }])).size).toBe(0);
    const lateFailure = {
      jobId: job.id, executionId: job.executionId, outcome: "failed" as const, error: null, event: "attempt_failed" as const,
      delayMs: 0,
    };
    expect(await storeOf(conveyor).jobEndAttempts([lateFailure])).toEqual([]);
    expect(await executionRows()).toBe(1);
    const written = await storeOf(conveyor).jobComplete([{ jobId: job.id, executionId: again!.executionId, result: null }]);
    expect(written.size).toBe(1);
    const done = await conveyor.getJob(job.id);
    expect(done!.executions.map((e) => [e.workerId, e.outcome])).toEqual([["racer", "lease_expired"], ["second-owner", "succeeded"]]);
  });

  it("concurrent sweeps reclaim each expired job exactly once, and spent attempts go to the dead-letter queue", async () => {
    await sql(conveyor, `DELETE FROM {{schema}}.jobs`);
    await conveyor.enqueueMany(Array.from({ length: 300 }, () => ({ job: noop, payload: {} })));
    expect(await storeOf(conveyor).jobClaim("crashed", 300, ["noop"], null, 60_000)).toHaveLength(300);
    await expireAll();
    const sweeps = await Promise.all(Array.from({ length: 6 }, () => storeOf(conveyor).jobReclaimExpired(40)));
    const again = await storeOf(conveyor).jobReclaimExpired(1000);
    const reclaimed = [...sweeps.flat(), ...again].map((job) => job.id);
    expect(reclaimed).toHaveLength(300);
    expect(new Set(reclaimed).size).toBe(300);
    const { rows } = await sql(conveyor, `SELECT outcome, count(*)::int AS n FROM {{schema}}.job_attempts GROUP BY outcome`);
    expect(rows).toEqual([{ outcome: "lease_expired", n: 300 }]);

    // Second crash: attempts (2) are spent now, so the sweep dead-letters them, atomically with history.
    expect(await storeOf(conveyor).jobClaim("crashed-again", 300, ["noop"], null, 60_000)).toHaveLength(300);
    await expireAll();
    const buried = (await Promise.all([storeOf(conveyor).jobReclaimExpired(1000), storeOf(conveyor).jobReclaimExpired(1000)])).flat();
    expect(buried).toHaveLength(300);
    expect(buried.every((job) => job.status === "dead")).toBe(true);
    const { rows: letters } = await sql(
      conveyor,
      `SELECT count(*)::int AS n, min((SELECT count(*) FROM {{schema}}.job_executions AS e WHERE e.job_id = j.id))::int AS h
       FROM {{schema}}.jobs_dead AS j WHERE j.dead_letter_id IS NOT NULL`,
    );
    expect(letters[0]).toEqual({ n: 300, h: 2 });
    const page = await conveyor.deadLetters.list({ limit: 300 });
    expect(page.items.map((letter) => letter.history.length)).toEqual(Array.from({ length: 300 }, () => 2));
  });
});
