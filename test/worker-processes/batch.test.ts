/**
 * A batch kind run by the CLI worker (`conveyor worker --jobs …`): its jobs
 * are gathered into batches of the kind's maxSize, and each job is settled
 * on its own.
 */
import { afterEach, describe, expect, it } from "vitest";
import { FAST_LEASE_ARGS, killAllWorkers, type LedgerSchema, ledgerSchema, spawnWorker } from "./process-helpers.js";
import { waitFor } from "../helpers/wait-for.js";

let current: LedgerSchema | null = null;

afterEach(async () => {
  await killAllWorkers();
  await current?.cleanup();
  current = null;
});

describe("conveyor worker with a batch kind", () => {
  it("runs the kind's jobs in batches of its maxSize and settles each job alone", async () => {
    const t = (current = await ledgerSchema());
    const jobs = await t.conveyor.enqueueMany([
      ...Array.from({ length: 7 }, () => ({ job: "test.ledger-batch", payload: {} })),
      { job: "test.ledger-batch", payload: { fail: true } },
    ]);
    const worker = spawnWorker({ databaseUrl: t.databaseUrl, schema: t.schema, args: [...FAST_LEASE_ARGS, "--concurrency", "8"] });
    await worker.waitForLog("worker started", 30_000);
    await waitFor("every job to end", async () => (await Promise.all(jobs.map((job) => t.conveyor.getJob(job.id)))).every((job) => job!.finishedAt !== null), 20_000);
    const ended = await Promise.all(jobs.map((job) => t.conveyor.getJob(job.id)));
    expect(ended.map((job) => job!.status)).toEqual([...Array(7).fill("succeeded"), "dead"]);
    const { rows } = await t.conveyor.pool.query(`SELECT reason AS size, count(*)::int AS n FROM "${t.schema}".ledger WHERE event = 'done' GROUP BY reason`);
    // Two batches of four, the failing job in one of them.
    expect(rows.map((row: { size: string; n: number }) => [row.size, row.n]).sort()).toEqual([["4", 7]]);
    for (const job of ended) expect(job!.executions[0]!.batch?.size).toBe(4);
    process.kill(worker.pid, "SIGTERM");
    expect((await worker.exited).code).toBe(0);
  });
});
