/**
 * Scenario 2: a worker is frozen with SIGSTOP past its lease while it holds
 * jobs, ideally just after a handler committed its side effect and before
 * its completion went out. The other workers reclaim and re-run those jobs;
 * then the frozen worker gets SIGCONT. Whatever it does on waking (its lease
 * keeper notices first and abandons the attempt, or the handler returns
 * first and its completion reaches the database), nothing it writes about
 * those jobs counts: each attempt it held ends `lease_expired`, and its
 * worker logs which fence stopped it. Three rounds, a different worker each.
 */
import { describe, expect, it } from "vitest";
import { between, chaosFile, DATABASE_FENCE, dbNow, deadlocks, LOCAL_FENCE, openExecutionsAt, sleep, summary } from "./harness.js";
import { waitFor } from "../helpers/wait-for.js";

const JOBS = 600;
const WORKERS = 3;
const ROUNDS = 3;
const DRAIN_BOUND_MS = 120_000;
const LEASE_MS = 2_000;
const ARGS = ["--concurrency", "4", "--lease-ms", String(LEASE_MS), "--heartbeat-ms", "500", "--reclaim-interval-ms", "500", "--poll-interval-ms", "100"];

const file = chaosFile();

describe("chaos: SIGSTOP past the lease", () => {
  it("fences the late completions of a worker frozen past its lease, three times over", async () => {
    const r = await file.start("sigstop");
    const deadlocksBefore = await deadlocks(file.database.url);
    const workers = Array.from({ length: WORKERS }, () => r.spawn(ARGS));
    await Promise.all(workers.map((w) => w.ready()));
    const work = (n: number) =>
      r.enqueue(Array.from({ length: n }, () => ({ job: "chaos.work" as const, payload: { sleepMs: between(100, 300), holdAfterMs: 150 } })));
    await work(JOBS);
    let enqueued = JOBS;
    const enqueuedAt = Date.now();
    r.startLeaseMonitor();

    const held: Array<{ pid: number; executions: Array<{ id: string; job_id: string }>; resumedAt: Date; frozenMs: number }> = [];
    for (let round = 0; round < ROUNDS; round += 1) {
      const victim = workers[round % WORKERS]!;
      // Keep work in hand for every round, however fast the machine drains.
      const left = await r.q<{ id: string }>(`SELECT id FROM ${r.s}.jobs WHERE status IN ('queued', 'retrying') LIMIT 100`);
      if (left.length < 100) {
        await work(200);
        enqueued += 200;
      }
      // Freeze it in the worst window when we can catch it: an effect committed, the completion not yet.
      await waitFor(
        `worker ${victim.pid} to hold a job past its side effect`,
        async () => {
          const [row] = await r.q<{ n: number }>(
            `SELECT count(*)::int AS n FROM ${r.s}.chaos_ledger AS l JOIN ${r.s}.job_attempts AS e ON e.id = l.execution_id
              WHERE l.pid = $1 AND l.event = 'effect' AND e.outcome = 'running'`,
            [victim.pid],
          );
          return row!.n > 0;
        },
        20_000,
        5,
      );
      victim.signal("SIGSTOP");
      const frozenAt = Date.now();
      const pausedAt = await dbNow(r);
      const open = await openExecutionsAt(r, victim.pid, pausedAt);
      try {
        // Frozen until every attempt it held is over in the database (the others' sweeps reclaimed them).
        await waitFor(
          `the attempts of frozen worker ${victim.pid} to be reclaimed`,
          async () => {
            const [row] = await r.q<{ n: number }>(
              `SELECT count(*)::int AS n FROM ${r.s}.job_attempts WHERE id = ANY($1::uuid[]) AND outcome = 'running'`,
              [open.map((e) => e.id)],
            );
            return row!.n === 0;
          },
          20_000,
          100,
        );
        // The last renewal may have come up to a heartbeat before the freeze: stay frozen a whole lease at least.
        await sleep(Math.max(0, frozenAt + LEASE_MS + 250 - Date.now()));
      } finally {
        victim.signal("SIGCONT");
      }
      const resumedAt = await dbNow(r);
      held.push({ pid: victim.pid, executions: open, resumedAt, frozenMs: Date.now() - frozenAt });
      await sleep(1_000);
    }

    const drainSeconds = await r.drained(DRAIN_BOUND_MS, enqueuedAt, () => workers);
    const maxOverdueMs = await r.stopLeaseMonitor();
    await sleep(500); // the last woken worker's fenced writes are logged
    await r.stopWorkers();

    let localFences = 0;
    let databaseFences = 0;
    let reclaimed = 0;
    for (const round of held) {
      const worker = workers.find((w) => w.pid === round.pid)!;
      expect(round.frozenMs).toBeGreaterThan(LEASE_MS);
      const lines = worker.logs();
      for (const { id } of round.executions) {
        const [execution] = await r.q<{ outcome: string; finished_at: Date }>(
          `SELECT outcome, finished_at FROM ${r.s}.job_attempts WHERE id = $1`,
          [id],
        );
        if (execution!.outcome === "succeeded") {
          // Its completion reached the database before the freeze outlasted the lease: legitimate, and before waking.
          expect(execution!.finished_at.getTime()).toBeLessThan(round.resumedAt.getTime());
          continue;
        }
        expect(execution!.outcome).toBe("lease_expired");
        reclaimed += 1;
        const fence = lines.find((line) => line.executionId === id && (line.msg === LOCAL_FENCE || line.msg === DATABASE_FENCE));
        expect(fence, `worker ${round.pid} logged no fence for execution ${id}`).toBeDefined();
        if (fence!.msg === LOCAL_FENCE) localFences += 1;
        else databaseFences += 1;
      }
    }
    expect(reclaimed).toBeGreaterThanOrEqual(ROUNDS);

    const verdict = await r.judge({ allowDuplicates: ["after_lease_expiry", "late_stale_owner"] });
    summary(
      "sigstop",
      verdict,
      `${ROUNDS} SIGSTOPs of ${held.map((h) => (h.frozenMs / 1000).toFixed(1)).join("/")} s (lease ${LEASE_MS / 1000} s)`,
      drainSeconds,
      `${reclaimed} attempts taken from frozen workers: ${localFences} abandoned by the lease keeper on waking, ` +
        `${databaseFences} completions refused by the database; longest overdue lease ${(maxOverdueMs / 1000).toFixed(1)} s`,
    );
    expect(verdict.violations).toEqual([]);
    expect(r.logProblems()).toEqual([]);
    expect(verdict.jobs).toBe(enqueued);
    expect(verdict.statuses).toEqual({ succeeded: enqueued });
    expect(maxOverdueMs).toBeLessThan(10_000);
    expect(await deadlocks(file.database.url), "deadlocks PostgreSQL counted in this scenario's database").toBe(deadlocksBefore);
  }, 240_000);
});
