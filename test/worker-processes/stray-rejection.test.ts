/**
 * A handler that leaves a promise behind which rejects after the handler
 * returned must not take the worker process (and every other job) down.
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

describe("stray rejections", () => {
  it("are logged and the worker keeps running jobs", async () => {
    const t = (current = await ledgerSchema());
    const worker = spawnWorker({ databaseUrl: t.databaseUrl, schema: t.schema, args: [...FAST_LEASE_ARGS, "--concurrency", "2"] });
    await worker.waitForLog("worker started", 30_000);
    await t.conveyor.enqueue("test.ledger", { strayRejection: true });
    const logged = await worker.waitForLog("unhandled promise rejection (ignored)", 15_000);
    expect(JSON.stringify(logged)).toContain("stray rejection after the handler returned");
    // Still alive, still working.
    const later = await t.conveyor.enqueue("test.ledger", {});
    await waitFor("the next job to succeed", async () => (await t.conveyor.getJob(later.id))?.status === "succeeded", 15_000);
    expect(worker.exit).toBeNull();
    expect(await t.db.countStatus("succeeded")).toBe(2);
    process.kill(worker.pid, "SIGTERM");
    expect((await worker.exited).code).toBe(0);
  });
});
