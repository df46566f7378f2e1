/**
 * Scenario: SIGTERM reaches a worker cut off from PostgreSQL. The worker
 * reaches the database through the fault proxy, holds a job whose handler
 * would run a minute, and the proxy then black-holes its connections
 * (accepts, never answers). SIGTERM with a 2 s grace: the worker must abort
 * the handler after the grace, try to hand the job back, give up on the dead
 * network within SHUTDOWN_CLEANUP_MS (and close its client within as much
 * again), and exit 0, instead of waiting on its
 * writes for the kernel's TCP timeouts. Its job, never handed back, returns
 * when its lease expires, and a worker with a direct connection finishes it.
 */
import { describe, expect, it } from "vitest";
import { SHUTDOWN_CLEANUP_MS } from "../../packages/core/src/core/defaults.js";
import { proxiedChaosFile, summary, viaPort } from "./harness.js";
import { waitFor } from "../helpers/wait-for.js";

/** Longer than grace + cleanup bound: the handler is still running (its lease not yet given up) when the grace ends. */
const LEASE_MS = 10_000;
const GRACE_MS = 2_000;
/** Scheduling slack on a loaded 2-core machine, on top of grace + cleanup bound. */
const SLACK_MS = 5_000;
const ARGS = ["--concurrency", "2", "--lease-ms", String(LEASE_MS), "--heartbeat-ms", "2000", "--reclaim-interval-ms", "500", "--poll-interval-ms", "100"];

const file = proxiedChaosFile();

describe("chaos: SIGTERM to a worker whose network is black-holed", () => {
  it("exits within the grace period plus the cleanup bound, and its job is finished elsewhere", async () => {
    const r = await file.start("shutdown-partitioned");
    const cut = r.spawn([...ARGS, "--shutdown-grace-ms", String(GRACE_MS)], { databaseUrl: viaPort(file.database.url, file.proxy.port) });
    await cut.ready();
    const [job] = await r.enqueue([{ job: "chaos.work", payload: { firstRunSleepMs: 60_000, sleepMs: 50 } }]);
    await waitFor("the worker to start the job", async () => (await r.q(`SELECT 1 FROM ${r.s}.chaos_ledger WHERE job_id = $1`, [job])).length > 0, 20_000);

    file.proxy.set({ kind: "blackhole" });
    const signalledAt = Date.now();
    cut.signal("SIGTERM");
    let exitedInMs: number;
    try {
      // The worker's hand-back and then the client's close() each give up after SHUTDOWN_CLEANUP_MS.
      expect(await cut.waitForExit(GRACE_MS + 2 * SHUTDOWN_CLEANUP_MS + SLACK_MS)).toEqual({ code: 0, signal: null });
      exitedInMs = Date.now() - signalledAt;
    } finally {
      file.proxy.set({ kind: "pass" });
    }
    expect(cut.logs().some((line) => line.msg === "grace period over: aborting handlers and handing their jobs back")).toBe(true);

    const direct = r.spawn(ARGS);
    await direct.ready();
    const drainSeconds = await r.drained(60_000, Date.now());
    await r.stopWorkers();

    const executions = await r.q<{ outcome: string }>(`SELECT outcome FROM ${r.s}.job_attempts WHERE job_id = $1 ORDER BY started_at`, [job]);
    // The hand-back never reached the database: the first attempt ended by lease expiry, the second succeeded.
    expect(executions.map((e) => e.outcome)).toEqual(["lease_expired", "succeeded"]);
    const verdict = await r.judge();
    summary("shutdown-partitioned", verdict, `SIGTERM with grace ${GRACE_MS / 1000} s while black-holed`, drainSeconds, `exited in ${(exitedInMs / 1000).toFixed(1)} s`);
    expect(verdict.violations).toEqual([]);
    expect(r.logProblems()).toEqual([]);
  }, 120_000);
});
