import pino from "pino";
import { describe, expect, it } from "vitest";
import type { ClaimedJob } from "../core/model.js";
import type { DurableDeps } from "./durable-run.js";
import { AttemptContext, type ContextDeps } from "./attempt-context.js";
import type { FlowStore } from "../store/flow-store.js";
import type { HandlerTools } from "./handler-tools.js";
import { Attempt } from "./attempt.js";

const claimed: ClaimedJob = {
  id: "job-1",
  tenant: "acme",
  kind: "report.build",
  queue: "reports",
  payload: { month: "2026-11" },
  attempts: 2,
  maxAttempts: 5,
  executionId: "execution-2",
  idempotencyKey: "cron:nightly:2026-11-23T00:00:00.000Z",
  waitedMs: 3,
};

function contextFor(renewed: Attempt[] = []) {
  const running = new Attempt(claimed, performance.now(), 60_000);
  const deps: ContextDeps = {
    log: pino({ level: "silent" }),
    workerId: "worker-a",
    renew: async (job) => {
      renewed.push(job);
      return true;
    },
    // Never reached here: these tests call neither progress nor transaction.
    tools: null as unknown as HandlerTools,
    flows: null as unknown as FlowStore,
    durable: null as unknown as DurableDeps,
  };
  return { running, context: new AttemptContext(running, deps) };
}

describe("AttemptContext", () => {
  it("describes the job and the attempt, the same object on every read", () => {
    const { context } = contextFor();
    expect(context.payload).toEqual({ month: "2026-11" });
    expect(context.job).toEqual({
      id: "job-1",
      kind: "report.build",
      tenant: "acme",
      queue: "reports",
      attempt: 2,
      maxAttempts: 5,
      executionId: "execution-2",
      workerId: "worker-a",
      cronTick: { schedule: "nightly", at: new Date("2026-11-23T00:00:00.000Z") },
    });
    expect(context.job).toBe(context.job);
    expect(context.log).toBe(context.log);
  });

  it("works destructured, as handlers take it", async () => {
    const renewed: Attempt[] = [];
    const { running, context } = contextFor(renewed);
    const { payload, job, signal, heartbeat, progress, transaction } = context;
    expect(payload).toBe(claimed.payload);
    expect(job.id).toBe("job-1");
    expect(await heartbeat()).toBe(true);
    expect(renewed).toEqual([running]);
    expect(typeof progress).toBe("function");
    expect(typeof transaction).toBe("function");
    running.abort(new Error("cancelled"));
    expect(signal.aborted).toBe(true);
  });

  it("has no tools until the handler reaches for progress or a transaction", () => {
    const { context } = contextFor();
    void context.progress;
    void context.transaction;
    expect(context.usedTools).toBeUndefined();
  });
});
