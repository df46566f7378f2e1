import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Conveyor, defineJob } from "../../packages/core/src/index.js";
import { createTestConveyor } from "../helpers/database.js";
import { emptyPayload, silent, sql } from "./support.js";
import { z } from "zod";
import { waitFor } from "../helpers/wait-for.js";
import { workerTestSignals } from "../../packages/core/src/worker/test-signals.js";

const started = new Set<string>();
const sleeper = defineJob({
  kind: "sleeper",
  schema: z.object({ ms: z.number(), ignoreSignal: z.boolean().default(false) }),
  handler: ({ payload, signal, job }) =>
    new Promise<void>((resolve, reject) => {
      started.add(job.id);
      const timer = setTimeout(resolve, payload.ms);
      if (!payload.ignoreSignal) {
        signal.addEventListener("abort", () => {
          clearTimeout(timer);
          reject(signal.reason);
        });
      }
    }),
});
const quick = defineJob({ kind: "quick", schema: emptyPayload, handler: () => "ok" });

describe("shutdown", () => {
  let conveyor: Conveyor;
  let cleanup: () => Promise<void>;
  beforeAll(async () => {
    ({ conveyor, cleanup } = await createTestConveyor({ jobs: [sleeper, quick], logger: silent }));
  });
  afterAll(() => cleanup());

  it("waits for running handlers within the grace period and stops claiming", async () => {
    const worker = conveyor.worker({ concurrency: 2, pollIntervalMs: 20, shutdownGraceMs: 10_000, logger: silent });
    const signals = workerTestSignals(worker).worker;
    await worker.start();
    const { id } = await conveyor.enqueue(sleeper, { ms: 300 });
    await waitFor("started", () => started.has(id));
    const stopped = worker.stop();
    // The claim loop ends before the running handler does: claiming stops first.
    await signals.claimLoopEnded.wait();
    expect((await conveyor.getJob(id))!.status).toBe("running");
    await stopped;
    expect((await conveyor.getJob(id))!.status).toBe("succeeded");
    // Stopped, the worker has no claim loop left to take a new job (its end was signalled above, once).
    const later = await conveyor.enqueue(quick, {});
    await expect(signals.claimLoopEnded.wait(0)).rejects.toThrow(/no test signal/);
    expect((await conveyor.getJob(later.id))!.status).toBe("queued");
    await conveyor.cancel(later.id);
  });

  it("past the grace period hands jobs back at once: interrupted, attempt not counted, never failed", async () => {
    const worker = conveyor.worker({ concurrency: 2, pollIntervalMs: 20, shutdownGraceMs: 100, logger: silent });
    await worker.start();
    const ignoring = await conveyor.enqueue(sleeper, { ms: 60_000, ignoreSignal: true });
    const listening = await conveyor.enqueue(sleeper, { ms: 60_000 });
    await waitFor("both started", () => started.has(ignoring.id) && started.has(listening.id));
    const before = Date.now();
    await worker.stop();
    expect(Date.now() - before).toBeLessThan(5_000);
    for (const id of [ignoring.id, listening.id]) {
      const job = await conveyor.getJob(id);
      expect(job).toMatchObject({ status: "queued", attempts: 0, lockedBy: null });
      expect(job!.executions.map((e) => e.outcome)).toEqual(["interrupted"]);
    }
    // Another worker picks them up.
    const next = conveyor.worker({ concurrency: 2, pollIntervalMs: 20, logger: silent });
    await sql(conveyor, `UPDATE {{schema}}.jobs SET payload = '{"ms": 10}' WHERE id = ANY($1)`, [[ignoring.id, listening.id]]);
    await next.start();
    await waitFor("finished by the next worker", async () =>
      (await Promise.all([ignoring.id, listening.id].map((id) => conveyor.getJob(id)))).every((job) => job!.status === "succeeded"),
    );
    await next.stop();
    expect((await conveyor.getJob(ignoring.id))!.attempts).toBe(1);
  });
});

describe("shutdown of a job whose cancel was requested", () => {
  let conveyor: Conveyor;
  let cleanup: () => Promise<void>;
  beforeAll(async () => {
    ({ conveyor, cleanup } = await createTestConveyor({ jobs: [sleeper], logger: silent }));
  });
  afterAll(() => cleanup());

  it("ends cancelled, not back in the queue, and the cancelled attempt counts", async () => {
    const worker = conveyor.worker({ concurrency: 1, pollIntervalMs: 20, heartbeatMs: 20_000, shutdownGraceMs: 50, logger: silent });
    await worker.start();
    const { id } = await conveyor.enqueue(sleeper, { ms: 60_000, ignoreSignal: true });
    await waitFor("started", () => started.has(id));
    expect((await conveyor.cancel(id)).outcome).toBe("cancel_requested");
    await worker.stop(); // the hand-back meets the cancel flag before any heartbeat saw it
    const job = await conveyor.getJob(id);
    expect(job).toMatchObject({ status: "cancelled", attempts: 1 });
    expect(job!.executions.map((e) => e.outcome)).toEqual(["cancelled"]);
  });
});

describe("wake-up", () => {
  let conveyor: Conveyor;
  let cleanup: () => Promise<void>;
  beforeAll(async () => {
    ({ conveyor, cleanup } = await createTestConveyor({ jobs: [quick], logger: silent }));
  });
  afterAll(() => cleanup());

  const succeeded = (id: string) => async () => (await conveyor.getJob(id))!.status === "succeeded";
  // Only this file's workers LISTEN on its schema's channel; other files run in parallel with their own.
  const listenStatement = () => `LISTEN "${conveyor.options.schema}:jobs"; LISTEN "${conveyor.options.schema}:cancel"`;

  it("LISTEN/NOTIFY wakes an idle worker long before its next poll", async () => {
    const worker = conveyor.worker({ pollIntervalMs: 600_000, logger: silent });
    const signals = workerTestSignals(worker).worker;
    await worker.start();
    try {
      // Asleep with no wake-up pending: from here only a notification (or the 10-minute poll) wakes it.
      await signals.idle.wait();
      const { id } = await conveyor.enqueue(quick, {});
      await waitFor("notified job to run", succeeded(id), 10_000);
    } finally {
      await worker.stop();
    }
  });

  it("poll-only mode runs jobs without LISTEN", async () => {
    const worker = conveyor.worker({ listen: false, pollIntervalMs: 50, logger: silent });
    await worker.start();
    try {
      const { rows } = await sql(conveyor, `SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'conveyor-listener' AND query = $1`, [listenStatement()]);
      const { id } = await conveyor.enqueue(quick, {});
      await waitFor("polled job to run", succeeded(id));
      expect(rows[0].n).toBe(0);
    } finally {
      await worker.stop();
    }
  });

  it("re-establishes a lost LISTEN connection while polling keeps jobs flowing", async () => {
    const worker = conveyor.worker({ pollIntervalMs: 200, logger: silent });
    await worker.start();
    try {
      // Resolves null (not an empty array, which waitFor would take as done) until a listener other than `except` is connected.
      const listenersExcept = async (except?: number) => {
        const { rows } = await sql(conveyor, `SELECT pid FROM pg_stat_activity WHERE application_name = 'conveyor-listener' AND query = $1`, [
          listenStatement(),
        ]);
        const others = rows.filter((row: { pid: number }) => row.pid !== except);
        return others.length > 0 ? others : null;
      };
      const [first] = await waitFor("listener connected", () => listenersExcept());
      await sql(conveyor, `SELECT pg_terminate_backend($1)`, [first.pid]);
      const { id } = await conveyor.enqueue(quick, {});
      await waitFor("job runs while LISTEN is down", succeeded(id));
      const [second] = await waitFor("listener back", () => listenersExcept(first.pid));
      expect(second.pid).not.toBe(first.pid);
    } finally {
      await worker.stop();
    }
  });
});
