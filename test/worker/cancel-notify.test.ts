/**
 * Cancelling a running job reaches its handler through the worker's LISTEN
 * connection: the cancel's commit sends a NOTIFY (from the
 * cancel's statement) and the worker aborts the handler's signal at once.
 * The workers here renew every 10 minutes, so only the notification can
 * explain an abort; the worker's test signal says which path observed it.
 * The heartbeat stays the fallback for a worker that does not LISTEN.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { type Conveyor, defineJob, type Worker } from "../../packages/core/src/index.js";
import { workerTestSignals, type WorkerLoopTestSignals } from "../../packages/core/src/worker/test-signals.js";
import { FaultProxy } from "../chaos/fault-proxy.js";
import { createTestConveyor, testDatabaseUrl } from "../helpers/database.js";
import { waitFor } from "../helpers/wait-for.js";
import { silent, sql } from "./support.js";

/** Execution ids of the attempts whose handler started, and of those whose signal aborted. */
const started = new Map<string, string>();
const aborted = new Set<string>();
const waiter = defineJob({
  kind: "cancel-notify",
  schema: z.object({ name: z.string() }),
  handler: ({ payload, signal, job }) =>
    new Promise<void>((resolve, reject) => {
      started.set(payload.name, job.executionId);
      const timer = setTimeout(resolve, 60_000);
      signal.addEventListener("abort", () => {
        aborted.add(job.executionId);
        clearTimeout(timer);
        reject(signal.reason);
      });
    }),
});

const TEN_MINUTES = 10 * 60 * 1000;

describe("cancelling a running job", () => {
  let conveyor: Conveyor;
  let cleanup: () => Promise<void>;
  let worker: Worker | null = null;
  beforeAll(async () => {
    ({ conveyor, cleanup } = await createTestConveyor({ jobs: [waiter], logger: silent }));
  });
  afterEach(async () => {
    await worker?.stop({ graceMs: 0 });
    worker = null;
  });
  afterAll(() => cleanup());

  /** A worker whose heartbeat comes every 10 minutes: a cancel it sees within the test came by NOTIFY. */
  async function startWorker(options: { listen?: boolean; heartbeatMs?: number } = {}): Promise<WorkerLoopTestSignals> {
    const heartbeatMs = options.heartbeatMs ?? TEN_MINUTES;
    worker = conveyor.worker({ concurrency: 4, pollIntervalMs: 50, heartbeatMs, leaseMs: 3 * heartbeatMs, listen: options.listen ?? true, logger: silent });
    const signals = workerTestSignals(worker).worker;
    await worker.start();
    return signals;
  }

  const executionOf = (name: string) => waitFor(`${name} started`, () => started.get(name));
  const ended = async (id: string) => {
    await waitFor("the job ended", async () => (await conveyor.getJob(id))!.finishedAt !== null);
    const job = (await conveyor.getJob(id))!;
    return { status: job.status, outcomes: job.executions.map((execution) => execution.outcome) };
  };

  it("through cancelFlow: the handler's signal aborts by NOTIFY, and the job ends cancelled", async () => {
    const signals = await startWorker();
    const flow = await conveyor.flows.enqueue({ jobs: { only: { job: waiter, payload: { name: "flow" } } } });
    const executionId = await executionOf("flow");
    const sentAt = performance.now();
    expect(await conveyor.flows.cancel(flow.id)).toMatchObject({ cancelRequested: 1 });
    expect(await signals.cancelObserved.wait(5_000)).toEqual({ executionId, via: "notification" });
    expect(performance.now() - sentAt).toBeLessThan(2_000);
    const [{ id }] = (await sql(conveyor, "SELECT job_id AS id FROM {{schema}}.flow_jobs WHERE flow_id = $1", [flow.id])).rows;
    expect(await ended(id)).toEqual({ status: "cancelled", outcomes: ["cancelled"] });
  });

  it("through cancel and a bulk cancel, each by NOTIFY", async () => {
    const signals = await startWorker();
    const one = await conveyor.enqueue(waiter, { name: "one" });
    const bulk = await conveyor.enqueue(waiter, { name: "bulk" }, { queue: "cancel-notify-bulk" });
    const [oneExecution, bulkExecution] = [await executionOf("one"), await executionOf("bulk")];
    expect((await conveyor.cancel(one.id)).outcome).toBe("cancel_requested");
    expect(await signals.cancelObserved.wait(5_000)).toEqual({ executionId: oneExecution, via: "notification" });
    const operation = await conveyor.bulkActions.start({ action: "cancel", filter: { queue: "cancel-notify-bulk" } });
    await conveyor.bulkActions.run(operation.id);
    expect(await signals.cancelObserved.wait(5_000)).toEqual({ executionId: bulkExecution, via: "notification" });
    expect(await ended(one.id)).toEqual({ status: "cancelled", outcomes: ["cancelled"] });
    expect(await ended(bulk.id)).toEqual({ status: "cancelled", outcomes: ["cancelled"] });
  });

  it("a cancel rolled back notifies nobody", async () => {
    const signals = await startWorker();
    const kept = await conveyor.enqueue(waiter, { name: "kept" });
    const cancelled = await conveyor.enqueue(waiter, { name: "cancelled" });
    const [keptExecution, cancelledExecution] = [await executionOf("kept"), await executionOf("cancelled")];
    const client = await conveyor.pool.connect();
    try {
      await client.query("BEGIN");
      await client.query(`UPDATE "${conveyor.options.schema}".jobs SET cancel_requested = true WHERE id = $1`, [kept.id]);
      await client.query("ROLLBACK");
    } finally {
      client.release();
    }
    // Notifications arrive in commit order: the next one the worker sees is the committed cancel's.
    await conveyor.cancel(cancelled.id);
    expect(await signals.cancelObserved.wait(5_000)).toEqual({ executionId: cancelledExecution, via: "notification" });
    expect(aborted.has(keptExecution)).toBe(false);
    await conveyor.cancel(kept.id);
    expect(await signals.cancelObserved.wait(5_000)).toEqual({ executionId: keptExecution, via: "notification" });
  });

  it("without LISTEN, the heartbeat still finds the cancel", async () => {
    const signals = await startWorker({ listen: false, heartbeatMs: 200 });
    const { id } = await conveyor.enqueue(waiter, { name: "polled" });
    const executionId = await executionOf("polled");
    await conveyor.cancel(id);
    expect(await signals.cancelObserved.wait(5_000)).toEqual({ executionId, via: "heartbeat" });
    expect(await ended(id)).toEqual({ status: "cancelled", outcomes: ["cancelled"] });
  });

  it("a cancel that arrives between a claim's commit and its answer: the handler never starts", async () => {
    // The worker's claim connection goes through a proxy that holds the claim's answer back.
    const target = new URL(testDatabaseUrl());
    const proxy = new FaultProxy(target.hostname, Number(target.port || 5432));
    const through = new URL(target);
    through.hostname = "127.0.0.1";
    through.port = String(await proxy.start());
    const proxied = await createTestConveyor(
      { jobs: [waiter], logger: silent, connectionString: through.toString(), schema: conveyor.options.schema },
      { migrate: false },
    );
    const held = proxied.conveyor.worker({ pollIntervalMs: 60_000, heartbeatMs: TEN_MINUTES, leaseMs: 3 * TEN_MINUTES, logger: silent });
    const signals = workerTestSignals(held).worker;
    try {
      await held.start();
      await signals.idle.wait();
      proxy.holdRepliesTo((connection) => connection.tags.application_name === "conveyor-claims");
      const { id } = await conveyor.enqueue(waiter, { name: "early" });
      const executionId = await waitFor("the held claim committed", async () => {
        const { rows } = await sql(conveyor, "SELECT current_execution_id FROM {{schema}}.jobs WHERE id = $1 AND status = 'running'", [id]);
        return rows[0]?.current_execution_id as string | undefined;
      });
      expect((await conveyor.cancel(id)).outcome).toBe("cancel_requested");
      expect(await signals.cancelNotified.wait()).toEqual({ executionId, held: false });
      proxy.releaseReplies();
      expect(await signals.cancelObserved.wait()).toEqual({ executionId, via: "notification" });
      expect(await ended(id)).toEqual({ status: "cancelled", outcomes: ["cancelled"] });
      expect(started.has("early")).toBe(false);
    } finally {
      proxy.releaseReplies();
      await held.stop({ graceMs: 0 });
      await proxied.cleanup();
      await proxy.stop();
    }
  });
});
