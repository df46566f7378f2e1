/**
 * Scenario: the worker faults again, with every worker reaching PostgreSQL
 * through PgBouncer in transaction mode (CONVEYOR_POOLER=transaction, polling,
 * fewer server connections than workers' connections): workers SIGKILLed
 * and replaced, one SIGSTOPped past its lease and resumed, and PostgreSQL
 * restarted once under the pooler. Every job ends succeeded with at most one
 * succeeded execution, and nothing stays running past its lease for long.
 */
import { describe, expect, it } from "vitest";
import { startPgBouncer } from "../helpers/pgbouncer.js";
import type { CliProcess } from "../worker-processes/process-helpers.js";
import { between, deadlocks, onDedicatedServer, sleep, summary } from "./harness.js";
import { waitFor } from "../helpers/wait-for.js";

const JOBS = 6_000;
const WORKERS = 3;
const LEASE_MS = 3_000;
const DRAIN_BOUND_MS = 180_000;
const ARGS = ["--concurrency", "4", "--lease-ms", String(LEASE_MS), "--heartbeat-ms", "500", "--reclaim-interval-ms", "500", "--poll-interval-ms", "100"];

describe("chaos: through PgBouncer in transaction mode", () => {
  it(`finishes ${JOBS} jobs through the pooler while workers are killed and frozen and PostgreSQL restarts`, async () => {
    await onDedicatedServer("pooler", async (r, server) => {
      const bouncer = await startPgBouncer(r.databaseUrl, 4);
      try {
        const spawn = () => r.spawn(ARGS, { databaseUrl: bouncer.url, env: { CONVEYOR_POOLER: "transaction" } });
        const pool: CliProcess[] = Array.from({ length: WORKERS }, spawn);
        await Promise.all(pool.map((w) => w.ready()));
        const deadlocksBefore = await deadlocks(r.databaseUrl);
        await r.enqueue(Array.from({ length: JOBS }, () => ({ job: "chaos.work" as const, payload: { sleepMs: between(20, 40) } })));
        const enqueuedAt = Date.now();
        r.startLeaseMonitor();
        const succeeded = async () => (await r.statusCounts()).succeeded ?? 0;
        const reach = (share: number) => waitFor(`${share * 100}% of the jobs to succeed`, async () => (await succeeded()) >= JOBS * share, 90_000, 50);

        const faults: string[] = [];
        for (const share of [0.1, 0.25]) {
          await reach(share);
          const index = between(0, pool.length - 1);
          pool[index]!.signal("SIGKILL");
          await pool[index]!.waitForExit(10_000);
          pool[index] = spawn();
          await pool[index]!.ready();
          faults.push("SIGKILL");
        }
        await reach(0.4);
        const frozen = pool[0]!;
        frozen.signal("SIGSTOP");
        await sleep(LEASE_MS * 2);
        frozen.signal("SIGCONT");
        faults.push(`SIGSTOP ${((LEASE_MS * 2) / 1000).toFixed(0)} s`);
        await reach(0.75);
        const beforeRestart = await succeeded();
        await server.restartAfter("fast", 1_000);
        faults.push("PostgreSQL restart");
        expect(beforeRestart, "jobs succeeded when PostgreSQL went down").toBeLessThan(JOBS); // the restart hit running work

        const drainSeconds = await r.drained(DRAIN_BOUND_MS, enqueuedAt);
        const maxOverdueMs = await r.stopLeaseMonitor();
        await r.stopWorkers();
        const verdict = await r.judge({ allowDuplicates: ["after_lease_expiry", "late_stale_owner", "after_failure"] });
        summary("pooler", verdict, faults.join(", "), drainSeconds, `longest overdue lease ${(maxOverdueMs / 1000).toFixed(1)} s`);
        expect(verdict.violations).toEqual([]);
        expect(r.logProblems()).toEqual([]);
        expect(verdict.statuses).toEqual({ succeeded: JOBS });
        expect(verdict.outcomes.lease_expired ?? 0).toBeGreaterThan(0);
        // A lease can be overdue through the restart: no sweep runs while the server is down.
        expect(maxOverdueMs).toBeLessThan(10_000);
        expect(await deadlocks(r.databaseUrl), "deadlocks PostgreSQL counted in this scenario's database").toBe(deadlocksBefore);
      } finally {
        await r.stopWorkers().catch(() => {});
        await bouncer.stop();
      }
    });
  }, 300_000);
});
