/**
 * A worker process dies (SIGKILL) or freezes (SIGSTOP, or a blocked event
 * loop) while it holds jobs. Another worker process must reclaim them once
 * the lease runs out and finish them; the frozen one, when it wakes, must
 * change nothing: its handler's signal aborts with LeaseLostError, and a
 * completion it still sends is refused by the database (fencing).
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
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
let tempDir: string | null = null;

afterEach(async () => {
  await killAllWorkers();
  await current?.cleanup();
  current = null;
  if (tempDir) rmSync(tempDir, { recursive: true, force: true });
  tempDir = null;
});

describe("worker process faults", () => {
  it("reclaims the jobs of a worker killed with SIGKILL and finishes them on another worker", async () => {
    const t = (current = await ledgerSchema());
    const worker = (args: string[]) => spawnWorker({ databaseUrl: t.databaseUrl, schema: t.schema, args: [...FAST_LEASE_ARGS, ...args] });

    const victim = worker(["--concurrency", "4"]);
    await victim.ready();
    // The first run sleeps a minute (it must still be running when killed); the rerun is quick.
    const held = await t.conveyor.enqueueMany(
      Array.from({ length: 4 }, () => ({ job: "test.ledger", payload: { trackStart: true, firstRunSleepMs: 60_000, sleepMs: 100 } })),
    );
    await waitFor("the victim to start all four jobs", async () => (await t.db.ledger({ pid: victim.pid, event: "start" })).length === 4, 20_000);
    // Queued behind the full victim: only the survivor can run these.
    const behind = await t.conveyor.enqueueMany(Array.from({ length: 6 }, () => ({ job: "test.ledger", payload: { trackStart: true, sleepMs: 50 } })));

    const survivor = worker(["--concurrency", "4"]);
    await survivor.ready();
    victim.signal("SIGKILL");
    expect(await victim.waitForExit(10_000)).toEqual({ code: null, signal: "SIGKILL" });

    const all = [...held, ...behind];
    await waitFor("every job to succeed", async () => (await t.db.countStatus("succeeded")) === all.length, 30_000, 200);
    expect(await t.db.statusCounts()).toEqual({ succeeded: all.length });

    for (const { id } of held) {
      const job = await t.db.job(id);
      expect(job.attempts).toBe(2);
      expect(job.result).toEqual({ pid: survivor.pid });
      const executions = await t.db.executions(id);
      expect(executions.map((e) => ({ attempt: e.attempt, outcome: e.outcome }))).toEqual([
        { attempt: 1, outcome: "lease_expired" },
        { attempt: 2, outcome: "succeeded" },
      ]);
      expect(executions[0]!.worker_id).toMatch(workerIdOf(victim.pid));
      expect(executions[0]!.error?.message).toContain(`lease expired on worker ${executions[0]!.worker_id}`);
      expect(executions[1]!.worker_id).toMatch(workerIdOf(survivor.pid));
      // The side effect happened once, by the survivor, in the execution that counted.
      const done = await t.db.ledger({ jobId: id, event: "done" });
      expect(done.map((row) => [row.pid, row.execution_id])).toEqual([[survivor.pid, executions[1]!.id]]);
    }
    for (const { id } of behind) {
      const executions = await t.db.executions(id);
      expect(executions.map((e) => [e.attempt, e.outcome])).toEqual([[1, "succeeded"]]);
      expect(executions[0]!.worker_id).toMatch(workerIdOf(survivor.pid));
      expect(await t.db.ledger({ jobId: id, event: "done" })).toHaveLength(1);
    }
    // The victim finished nothing.
    expect(await t.db.ledger({ pid: victim.pid, event: "done" })).toEqual([]);

    survivor.signal("SIGTERM");
    expect(await survivor.waitForExit(15_000)).toEqual({ code: 0, signal: null });
  }, 90_000);

  it("fences a worker paused past its lease: another finishes the job, the paused one writes nothing and its signal aborts", async () => {
    const t = (current = await ledgerSchema());
    const worker = (args: string[]) => spawnWorker({ databaseUrl: t.databaseUrl, schema: t.schema, args: [...FAST_LEASE_ARGS, ...args] });

    const paused = worker(["--concurrency", "1"]);
    await paused.ready();
    const [enqueued] = await t.conveyor.enqueueMany([{ job: "test.ledger", payload: { trackStart: true, firstRunSleepMs: 60_000, sleepMs: 100 } }]);
    const jobId = enqueued!.id;
    await waitFor("the first worker to start the job", async () => (await t.db.ledger({ pid: paused.pid, event: "start" })).length === 1, 20_000);

    const other = worker(["--concurrency", "1"]);
    await other.ready();
    paused.signal("SIGSTOP");
    try {
      await waitFor("the other worker to finish the job", async () => (await t.db.job(jobId)).status === "succeeded", 30_000, 200);
    } finally {
      paused.signal("SIGCONT");
    }
    const finished = await t.db.job(jobId);

    // On waking, the paused worker notices the lost lease: its handler's signal aborts with LeaseLostError…
    const aborts = await waitFor(
      "the paused worker's handler to see its signal abort",
      async () => {
        const rows = await t.db.ledger({ pid: paused.pid, event: "abort" });
        return rows.length > 0 ? rows : null;
      },
      15_000,
    );
    expect(aborts.map((row) => row.reason)).toEqual(["LeaseLostError"]);
    // …and it says so, then writes nothing.
    await paused.waitForLog("lease lost while running; this attempt writes nothing", 10_000);

    const executions = await t.db.executions(jobId);
    expect(executions.map((e) => ({ attempt: e.attempt, outcome: e.outcome }))).toEqual([
      { attempt: 1, outcome: "lease_expired" },
      { attempt: 2, outcome: "succeeded" },
    ]);
    expect(executions[0]!.worker_id).toMatch(workerIdOf(paused.pid));
    expect(executions[1]!.worker_id).toMatch(workerIdOf(other.pid));
    // The job is exactly as the other worker left it.
    const after = await t.db.job(jobId);
    expect(after).toEqual(finished);
    expect(after.result).toEqual({ pid: other.pid });
    expect(after.attempts).toBe(2);
    const done = await t.db.ledger({ jobId, event: "done" });
    expect(done.map((row) => [row.pid, row.execution_id])).toEqual([[other.pid, executions[1]!.id]]);

    // The paused worker survived its pause and still shuts down cleanly.
    expect(paused.alive).toBe(true);
    paused.signal("SIGTERM");
    other.signal("SIGTERM");
    expect(await paused.waitForExit(15_000)).toEqual({ code: 0, signal: null });
    expect(await other.waitForExit(15_000)).toEqual({ code: 0, signal: null });
  }, 90_000);

  it("fences at the database a completion written after the lease was lost (event loop blocked past the lease)", async () => {
    const t = (current = await ledgerSchema());
    const worker = (args: string[]) => spawnWorker({ databaseUrl: t.databaseUrl, schema: t.schema, args: [...FAST_LEASE_ARGS, ...args] });
    tempDir = mkdtempSync(join(tmpdir(), "conveyor-block-"));
    const release = join(tempDir, "release");

    const blocked = worker(["--concurrency", "1"]);
    await blocked.ready();
    // The first run blocks the blocked worker's whole event loop (no heartbeat, no lease check)
    // until the test creates `release`, then returns at once: its completion is sent before the
    // worker can notice the lease is gone, so only the database's fence can refuse it.
    const [enqueued] = await t.conveyor.enqueueMany([
      { job: "test.ledger", payload: { trackStart: true, firstRunBlockUntilFile: release, sleepMs: 100 } },
    ]);
    const jobId = enqueued!.id;
    await waitFor("the first worker to start the job", async () => (await t.db.ledger({ pid: blocked.pid, event: "start" })).length === 1, 20_000);

    const other = worker(["--concurrency", "1"]);
    await other.ready();
    try {
      await waitFor("the other worker to finish the job", async () => (await t.db.job(jobId)).status === "succeeded", 30_000, 200);
    } finally {
      writeFileSync(release, "");
    }
    const finished = await t.db.job(jobId);

    await blocked.waitForLog("outcome not recorded: the job is no longer ours (fenced)", 15_000);
    // The blocked handler did its work (the side effect landed)…
    const executions = await t.db.executions(jobId);
    await waitFor("the blocked handler's ledger entry", async () => (await t.db.ledger({ pid: blocked.pid, event: "done" })).length === 1, 10_000);
    const [blockedDone] = await t.db.ledger({ pid: blocked.pid, event: "done" });
    expect(blockedDone!.execution_id).toBe(executions[0]!.id);
    // …but its completion changed nothing: the job is as the other worker left it.
    expect(executions.map((e) => ({ attempt: e.attempt, outcome: e.outcome }))).toEqual([
      { attempt: 1, outcome: "lease_expired" },
      { attempt: 2, outcome: "succeeded" },
    ]);
    expect(executions[0]!.worker_id).toMatch(workerIdOf(blocked.pid));
    expect(executions[1]!.worker_id).toMatch(workerIdOf(other.pid));
    const after = await t.db.job(jobId);
    expect(after).toEqual(finished);
    expect(after.result).toEqual({ pid: other.pid });

    expect(blocked.alive).toBe(true);
    blocked.signal("SIGTERM");
    other.signal("SIGTERM");
    expect(await blocked.waitForExit(15_000)).toEqual({ code: 0, signal: null });
    expect(await other.waitForExit(15_000)).toEqual({ code: 0, signal: null });
  }, 90_000);
});
