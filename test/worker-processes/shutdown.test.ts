/**
 * SIGTERM on a worker process: running handlers get the grace period to
 * finish and the process exits 0; a handler that ignores its signal past the
 * grace is abandoned, its job handed back at once (attempt not counted) and
 * finished by another worker. A second SIGTERM ends the grace period at once:
 * the handler is aborted, its job handed back (not left to its lease), and the
 * process exits 0.
 */
import { resolve } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { JsonLinesProcess, REPO_ROOT } from "../helpers/child-process.js";
import {
  FAST_LEASE_ARGS,
  killAllWorkers,
  type LedgerSchema,
  ledgerSchema,
  spawnWorker,
  workerIdOf,
} from "./process-helpers.js";
import { waitFor } from "../helpers/wait-for.js";

let current: LedgerSchema | null = null;

afterEach(async () => {
  await killAllWorkers();
  await current?.cleanup();
  current = null;
});

describe("worker process shutdown", () => {
  it("lets running jobs finish on SIGTERM, takes no new ones, and exits 0", async () => {
    const t = (current = await ledgerSchema());
    const worker = spawnWorker({ databaseUrl: t.databaseUrl, schema: t.schema, args: [...FAST_LEASE_ARGS, "--concurrency", "6"] });
    await worker.ready();
    const running = await t.conveyor.enqueueMany(Array.from({ length: 3 }, () => ({ job: "test.ledger", payload: { trackStart: true, sleepMs: 1_500 } })));
    await waitFor("all three jobs to start", async () => (await t.db.ledger({ pid: worker.pid, event: "start" })).length === 3, 20_000);

    worker.signal("SIGTERM");
    await worker.waitForLog("shutting down gracefully", 10_000);
    // Enqueued after the worker stopped claiming, with free slots: it must leave these alone.
    const late = await t.conveyor.enqueueMany(Array.from({ length: 2 }, () => ({ job: "test.ledger", payload: { trackStart: true } })));

    expect(await worker.waitForExit(20_000)).toEqual({ code: 0, signal: null });
    for (const { id } of running) {
      const job = await t.db.job(id);
      expect(job).toMatchObject({ status: "succeeded", attempts: 1, result: { pid: worker.pid } });
      const executions = await t.db.executions(id);
      expect(executions.map((e) => [e.attempt, e.outcome])).toEqual([[1, "succeeded"]]);
      expect(executions[0]!.worker_id).toMatch(workerIdOf(worker.pid));
    }
    for (const { id } of late) {
      expect(await t.db.job(id)).toMatchObject({ status: "queued", attempts: 0 });
      expect(await t.db.executions(id)).toEqual([]);
    }
    expect(await t.db.ledger({ event: "abort" })).toEqual([]);
  }, 60_000);

  it("hands a job back when its handler ignores the signal past the grace, and another worker finishes it", async () => {
    const t = (current = await ledgerSchema());
    const quitter = spawnWorker({
      databaseUrl: t.databaseUrl,
      schema: t.schema,
      args: [...FAST_LEASE_ARGS, "--concurrency", "2", "--shutdown-grace-ms", "500"],
    });
    await quitter.ready();
    // The first run ignores its signal and would sleep a minute; the rerun is quick.
    const [enqueued] = await t.conveyor.enqueueMany([
      { job: "test.ledger", payload: { trackStart: true, firstRunSleepMs: 60_000, ignoreSignal: true, sleepMs: 100 } },
    ]);
    const jobId = enqueued!.id;
    await waitFor("the first worker to start the job", async () => (await t.db.ledger({ pid: quitter.pid, event: "start" })).length === 1, 20_000);

    const other = spawnWorker({ databaseUrl: t.databaseUrl, schema: t.schema, args: [...FAST_LEASE_ARGS, "--concurrency", "2"] });
    await other.ready();
    const signalledAt = Date.now();
    quitter.signal("SIGTERM");
    expect(await quitter.waitForExit(15_000)).toEqual({ code: 0, signal: null });
    // Grace (500 ms) plus the hand-back write, far from the minute the handler wanted.
    expect(Date.now() - signalledAt).toBeLessThan(5_000);

    await waitFor("the other worker to finish the job", async () => (await t.db.job(jobId)).status === "succeeded", 20_000, 200);
    const executions = await t.db.executions(jobId);
    // Handed back by the quitter itself ('interrupted'; a lease sweep would record 'lease_expired'),
    // and the attempt given back (attempts to 0), so the rerun is attempt 1 again.
    expect(executions.map((e) => ({ attempt: e.attempt, outcome: e.outcome }))).toEqual([
      { attempt: 1, outcome: "interrupted" },
      { attempt: 1, outcome: "succeeded" },
    ]);
    expect(executions[0]!.worker_id).toMatch(workerIdOf(quitter.pid));
    expect(executions[0]!.error?.name).toBe("WorkerShutdownError");
    expect(executions[1]!.worker_id).toMatch(workerIdOf(other.pid));
    const job = await t.db.job(jobId);
    expect(job).toMatchObject({ status: "succeeded", attempts: 1, result: { pid: other.pid } });
    const done = await t.db.ledger({ jobId, event: "done" });
    expect(done.map((row) => [row.pid, row.execution_id])).toEqual([[other.pid, executions[1]!.id]]);

    other.signal("SIGTERM");
    expect(await other.waitForExit(15_000)).toEqual({ code: 0, signal: null });
  }, 60_000);

  it("ends the grace period at a second SIGTERM: hands the job back as interrupted and exits 0", async () => {
    const t = (current = await ledgerSchema());
    const worker = spawnWorker({
      databaseUrl: t.databaseUrl,
      schema: t.schema,
      args: [...FAST_LEASE_ARGS, "--concurrency", "2", "--shutdown-grace-ms", "60000"],
    });
    await worker.ready();
    // Would run a minute; it stops when its signal aborts.
    const [enqueued] = await t.conveyor.enqueueMany([{ job: "test.ledger", payload: { trackStart: true, sleepMs: 60_000 } }]);
    const jobId = enqueued!.id;
    await waitFor("the worker to start the job", async () => (await t.db.ledger({ pid: worker.pid, event: "start" })).length === 1, 20_000);

    worker.signal("SIGTERM");
    await worker.waitForLog("waiting for running jobs before shutdown", 10_000);
    const secondAt = Date.now();
    worker.signal("SIGTERM");
    // Not killed by the signal (Node's default for an unhandled one), and far inside the 60 s grace.
    expect(await worker.waitForExit(15_000)).toEqual({ code: 0, signal: null });
    expect(Date.now() - secondAt).toBeLessThan(10_000);

    const executions = await t.db.executions(jobId);
    expect(executions.map((e) => ({ attempt: e.attempt, outcome: e.outcome }))).toEqual([{ attempt: 1, outcome: "interrupted" }]);
    expect(await t.db.job(jobId)).toMatchObject({ status: "queued", attempts: 0 });
  }, 60_000);

  it("lets a program exit as soon as it has stopped its worker and closed the client", async () => {
    const t = (current = await ledgerSchema());
    const child = new JsonLinesProcess(resolve(REPO_ROOT, "test/fixtures/stop-and-exit.mjs"), [t.databaseUrl, t.schema]);
    try {
      expect(await child.next(30_000)).toEqual({ stopped: true });
      const stoppedAt = Date.now();
      // Nothing left to wait for: a timer of the grace period (30 s) or a pooled socket would hold the process.
      expect(await child.exited).toEqual({ code: 0, signal: null });
      expect(Date.now() - stoppedAt).toBeLessThan(5_000);
    } finally {
      child.child.kill("SIGKILL");
    }
  }, 60_000);
});
