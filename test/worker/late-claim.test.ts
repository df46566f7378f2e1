/**
 * A claim whose answer reaches the worker after the lease could have run
 * out starts no handler. The answer is held back for real: the worker's
 * claim connection goes through a TCP proxy that keeps the server's bytes
 * from it while the claim commits on the server, until the lease has
 * expired in the database and another worker's sweep has reclaimed the job.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Conveyor, defineJob } from "../../packages/core/src/index.js";
import { workerTestSignals } from "../../packages/core/src/worker/test-signals.js";
import { FaultProxy } from "../chaos/fault-proxy.js";
import { createTestConveyor, testDatabaseUrl } from "../helpers/database.js";
import { waitFor } from "../helpers/wait-for.js";
import { emptyPayload, silent, sql } from "./support.js";

/** Each attempt whose handler started, in order. */
const starts: Array<{ jobId: string; executionId: string }> = [];
const recorded = defineJob({
  kind: "late-claim",
  schema: emptyPayload,
  handler: async ({ job, progress }) => {
    starts.push({ jobId: job.id, executionId: job.executionId });
    await progress({ started: true });
  },
});

/** What each late `ctx.progress` call resolved to. */
const lateProgress: boolean[] = [];
const frozen = defineJob({
  kind: "late-progress",
  schema: emptyPayload,
  maxAttempts: 1,
  handler: async ({ progress }) => {
    // Block the event loop past the lease (a long GC pause, a synchronous loop): no renewal can run meanwhile.
    const until = performance.now() + 800;
    while (performance.now() < until) {
      // spin
    }
    lateProgress.push(await progress({ late: true }));
  },
});

/** What each late `ctx.heartbeat` call resolved to. */
const lateHeartbeats: boolean[] = [];
const frozenBeating = defineJob({
  kind: "late-heartbeat",
  schema: emptyPayload,
  maxAttempts: 1,
  handler: async ({ heartbeat }) => {
    const until = performance.now() + 800; // past the 500 ms lease, the event loop blocked
    while (performance.now() < until) {
      // spin
    }
    lateHeartbeats.push(await heartbeat());
  },
});

describe("a claim answered after the lease's deadline", () => {
  let conveyor: Conveyor;
  let proxied: Conveyor;
  let proxy: FaultProxy;
  const cleanups: Array<() => Promise<void>> = [];
  beforeAll(async () => {
    let cleanup: () => Promise<void>;
    ({ conveyor, cleanup } = await createTestConveyor({ jobs: [recorded, frozen, frozenBeating], logger: silent }));
    cleanups.push(cleanup);
    const target = new URL(testDatabaseUrl());
    proxy = new FaultProxy(target.hostname, Number(target.port || 5432));
    const through = new URL(target);
    through.hostname = "127.0.0.1";
    through.port = String(await proxy.start());
    cleanups.push(() => proxy.stop());
    ({ conveyor: proxied, cleanup } = await createTestConveyor(
      { jobs: [recorded], logger: silent, connectionString: through.toString(), schema: conveyor.options.schema },
      { migrate: false },
    ));
    cleanups.push(cleanup);
  });
  afterAll(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  });

  it("starts no handler and writes nothing; the job is reclaimed and run once elsewhere", async () => {
    const late = proxied.worker({ leaseMs: 1_000, heartbeatMs: 300, pollIntervalMs: 60_000, reclaimIntervalMs: 600_000, logger: silent });
    const signals = workerTestSignals(late).worker;
    const other = conveyor.worker({ pollIntervalMs: 50, reclaimIntervalMs: 600_000, logger: silent });
    try {
      await late.start();
      await signals.idle.wait(); // its first (empty) claim is answered: the claim connection is open
      proxy.holdRepliesTo((connection) => connection.tags.application_name === "conveyor-claims");
      const { id } = await conveyor.enqueue(recorded, {}); // its NOTIFY wakes the worker, whose claim commits unanswered
      const claimed = await waitFor("the held claim committed", async () => {
        const { rows } = await sql(conveyor, "SELECT current_execution_id, locked_by FROM {{schema}}.jobs WHERE id = $1 AND status = 'running'", [id]);
        return rows[0] as { current_execution_id: string; locked_by: string } | undefined;
      });
      expect(claimed.locked_by).toBe(late.id);
      await waitFor("the lease expired in the database", async () => {
        const { rows } = await sql(conveyor, "SELECT lease_expires_at < now() AS expired FROM {{schema}}.jobs WHERE id = $1", [id]);
        return rows[0].expired as boolean;
      });
      // Reclaimed by the other worker's sweep here, or by the late worker's own first sweep (its pool is not held back).
      await other.reclaimExpired();
      await waitFor("the expired attempt reclaimed", async () => (await conveyor.getJob(id))!.executions[0]?.outcome === "lease_expired");

      proxy.releaseReplies();
      // A handler is started synchronously as its round launches it: by this signal it would be in `starts`.
      let round = await signals.claimRound.wait();
      while (round.claimed === 0) round = await signals.claimRound.wait(); // the empty rounds before it
      expect(round.claimed).toBe(1);
      expect(starts).toEqual([]);
      expect(late.activeCount).toBe(0);
      const skipped = await signals.attemptSkippedLate.wait();
      expect(skipped).toMatchObject({ jobId: id, executionId: claimed.current_execution_id });
      expect(skipped.lateByMs).toBeGreaterThanOrEqual(0);

      // The reclaimed job runs again as a new attempt (on either worker): once, and never as the late one.
      await other.start();
      await waitFor("run again", async () => (await conveyor.getJob(id))!.status === "succeeded");
      const job = (await conveyor.getJob(id))!;
      expect(job.executions.map((e) => [e.outcome, e.id === claimed.current_execution_id])).toEqual([
        ["lease_expired", true],
        ["succeeded", false],
      ]);
      expect(starts).toEqual([{ jobId: id, executionId: job.executions[1]!.id }]);
      expect(job.progress).toEqual({ started: true });
    } finally {
      proxy.releaseReplies();
      await Promise.all([late.stop(), other.stop()]);
    }
  });

  it("starts no handler for a job its claim returns after the stop's grace period, and hands it back", async () => {
    const stopping = proxied.worker({ leaseMs: 60_000, pollIntervalMs: 60_000, reclaimIntervalMs: 600_000, logger: silent });
    const signals = workerTestSignals(stopping).worker;
    await stopping.start();
    await signals.idle.wait(); // its first (empty) claim is answered: the claim connection is open
    proxy.holdRepliesTo((connection) => connection.tags.application_name === "conveyor-claims");
    let stopped: Promise<void> | undefined;
    try {
      const { id } = await conveyor.enqueue(recorded, {}); // its NOTIFY wakes the worker, whose claim commits unanswered
      await waitFor("the held claim committed", async () => {
        const { rows } = await sql(conveyor, "SELECT locked_by FROM {{schema}}.jobs WHERE id = $1 AND status = 'running'", [id]);
        return rows[0]?.locked_by === stopping.id;
      });
      stopped = stopping.stop({ graceMs: 0 }); // the grace period is over at once; the claim is still unanswered
      proxy.releaseReplies();
      let round = await signals.claimRound.wait();
      while (round.claimed === 0) round = await signals.claimRound.wait(); // the empty rounds before it
      expect(round.claimed).toBe(1);
      await stopped; // stop() waits for the hand-back to be written
      expect(starts.filter((start) => start.jobId === id)).toEqual([]);
      const job = (await conveyor.getJob(id))!;
      expect(job.executions.map((execution) => execution.outcome)).toEqual(["interrupted"]);
      expect(job.status).toBe("queued");
      await sql(conveyor, "DELETE FROM {{schema}}.jobs WHERE id = $1", [id]);
    } finally {
      proxy.releaseReplies();
      await (stopped ?? stopping.stop());
    }
  });

  it("a progress write after the lease's local deadline is not sent", async () => {
    const worker = conveyor.worker({ kinds: ["late-progress"], leaseMs: 500, heartbeatMs: 150, reclaimIntervalMs: 600_000, logger: silent });
    try {
      await worker.start();
      const { id } = await conveyor.enqueue(frozen, {});
      await waitFor("the late progress call resolved", () => lateProgress.length === 1);
      expect(lateProgress).toEqual([false]);
      expect((await conveyor.getJob(id))!.progress).toBeNull();
    } finally {
      await worker.stop();
    }
  });

  it("ctx.heartbeat after the lease's local deadline renews nothing and reports the lease lost", async () => {
    const worker = conveyor.worker({ kinds: ["late-heartbeat"], leaseMs: 500, heartbeatMs: 150, reclaimIntervalMs: 600_000, logger: silent });
    try {
      await worker.start();
      const { id } = await conveyor.enqueue(frozenBeating, {});
      await waitFor("the late heartbeat resolved", () => lateHeartbeats.length === 1);
      expect(lateHeartbeats).toEqual([false]);
      // Not renewed: the lease ran out (and the worker's first sweep may have reclaimed the job already).
      const { rows } = await sql(conveyor, "SELECT status <> 'running' OR lease_expires_at < now() AS expired FROM {{schema}}.jobs WHERE id = $1", [id]);
      expect(rows[0].expired).toBe(true);
    } finally {
      await worker.stop();
    }
  });
});
