/**
 * Scenario 3: PostgreSQL restarted four times during a run, alternately in
 * fast mode (clean shutdown) and immediate mode (every backend killed, crash
 * recovery on start), on a server of the test's own. The same worker
 * processes ride every restart out (none is restarted) and every job ends
 * terminal with at most one success; the server log shows no deadlock.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { between, ChaosRun, type ChaosDatabase, createChaosDatabase, deadlocks, summary } from "./harness.js";
import { DedicatedPostgres, type StopMode } from "./dedicated-postgres.js";
import { StopWaiting, waitFor } from "../helpers/wait-for.js";

const JOBS = 4_000;
const WORKERS = 3;
const RESTARTS: ReadonlyArray<{ at: number; mode: StopMode }> = [
  { at: 0.15, mode: "fast" },
  { at: 0.35, mode: "immediate" },
  { at: 0.55, mode: "fast" },
  { at: 0.75, mode: "immediate" },
];
const DOWN_MS = 1_000;
const DRAIN_BOUND_MS = 150_000;
// The lease (10 s) outlasts each outage (1 s down plus start-up and recovery):
// the workers must carry their jobs across it.
const ARGS = ["--concurrency", "8", "--lease-ms", "10000", "--heartbeat-ms", "1000", "--reclaim-interval-ms", "500", "--poll-interval-ms", "100"];

let server: DedicatedPostgres | null = null;
let database: ChaosDatabase | null = null;
let run: ChaosRun | null = null;

beforeAll(async () => {
  server = await new DedicatedPostgres().start();
  database = await createChaosDatabase(server.url);
}, 120_000);

afterAll(async () => {
  await run?.cleanup();
  await database?.drop().catch(() => {});
  await server?.cleanup();
}, 60_000);

describe("chaos: PostgreSQL restarts", () => {
  it(`finishes ${JOBS} jobs while PostgreSQL restarts ${RESTARTS.length} times (fast and immediate)`, async () => {
    const r = (run = await new ChaosRun("postgres-restart", database!.url).setup());
    const workers = Array.from({ length: WORKERS }, () => r.spawn(ARGS));
    await Promise.all(workers.map((w) => w.ready()));
    await r.enqueue(Array.from({ length: JOBS }, () => ({ job: "chaos.work" as const, payload: { sleepMs: between(0, 15) } })));
    const enqueuedAt = Date.now();
    r.startLeaseMonitor();

    const outages: string[] = [];
    for (const { at, mode } of RESTARTS) {
      await waitFor(
        `${at * 100}% of the jobs to succeed`,
        async () => {
          for (const w of workers) if (!w.alive) throw new StopWaiting(`worker ${w.pid} exited: ${JSON.stringify(w.exit)}\n${w.output()}`);
          return ((await r.statusCounts()).succeeded ?? 0) >= JOBS * at;
        },
        60_000,
        50,
      );
      const downAt = Date.now();
      await server!.restartAfter(mode, DOWN_MS);
      outages.push(`${mode} ${((Date.now() - downAt) / 1000).toFixed(1)} s`);
      for (const w of workers) expect(w.alive, w.output()).toBe(true);
    }
    expect((await r.statusCounts()).succeeded ?? 0).toBeLessThan(JOBS); // work was left after the last restart

    const drainSeconds = await r.drained(DRAIN_BOUND_MS, enqueuedAt, () => workers);
    const maxOverdueMs = await r.stopLeaseMonitor();
    for (const w of workers) await w.waitForLog("LISTEN connection re-established", 20_000);
    await r.stopWorkers();
    for (const w of workers) expect(w.exit).toEqual({ code: 0, signal: null });

    // The handlers' own ledger writes can fail in an outage (the attempt fails and is retried), and a
    // commit whose answer was lost looks failed to the handler: that is the one way a live owner repeats
    // its side effect here. A claim whose answer was lost expires and is reclaimed: an extra execution.
    const verdict = await r.judge({ allowDuplicates: ["after_failure", "after_lease_expiry"] });
    // With what follows each (the processes, locks and statements in the cycle).
    const deadlockLines = server!.grep(/deadlock detected/i, 8);
    const recoveries = server!.grep(/database system was (interrupted|not properly shut down)|redo (starts|done)/i).length;
    summary(
      "postgres-restart",
      verdict,
      `${RESTARTS.length} restarts (${outages.join(", ")})`,
      drainSeconds,
      `${verdict.outcomes.failed ?? 0} attempts failed in outages, ${verdict.outcomes.lease_expired ?? 0} leases expired, ` +
        `${recoveries} crash-recovery log lines, ${deadlockLines.length} deadlocks in the server log`,
    );
    expect(verdict.violations).toEqual([]);
    expect(r.logProblems()).toEqual([]);
    expect(verdict.statuses).toEqual({ succeeded: JOBS });
    expect(deadlockLines).toEqual([]);
    expect(recoveries).toBeGreaterThan(0); // the immediate stops really crashed the server
    expect(await deadlocks(database!.url), "deadlocks PostgreSQL counted in this scenario's database").toBe(0);
    expect(maxOverdueMs).toBeLessThan(15_000);
  }, 240_000);
});
