/**
 * Scenario 6: SIGTERM during a run of long handlers, half of which ignore
 * their signal. Every 2-3 s a worker is told to stop and a replacement
 * started; workers get a short grace period (0.5 s: their handlers are
 * aborted and their jobs handed back) or a long one (6 s: they finish),
 * and the victims alternate between the two. Every stopped worker must exit 0 within its grace plus a
 * bound, hand its unfinished jobs back at once (`interrupted`, the attempt
 * given back; never `lease_expired`, never `failed`), and every job must end
 * succeeded exactly once.
 *
 * A second case: a job whose cancellation was requested while it ran, and
 * whose worker then shut down past the grace, ends `cancelled`, and its
 * attempt still counts the claim it recorded.
 */
import { describe, expect, it } from "vitest";
import { between, chaosFile, ChaosRun, deadlocks, sleep, summary } from "./harness.js";
import { waitFor } from "../helpers/wait-for.js";

const JOBS = 150;
const WORKERS = 3;
const DRAIN_BOUND_MS = 150_000;
/** A stopped worker exits within its grace plus this (abort, hand-back write, deregister, close). */
const EXIT_SLACK_MS = 5_000;
const GRACES = [500, 6_000];
const BASE = ["--concurrency", "4", "--lease-ms", "3000", "--heartbeat-ms", "1000", "--reclaim-interval-ms", "1000", "--poll-interval-ms", "100"];

const file = chaosFile();

describe("chaos: SIGTERM", () => {
  it("hands unfinished jobs back at once on SIGTERM, with and without handlers that ignore their signal", async () => {
    const r = await file.start("sigterm");
    const deadlocksBefore = await deadlocks(file.database.url);
    const graceOf = new Map<number, number>();
    let spawned = 0;
    const spawn = () => {
      const grace = GRACES[spawned++ % GRACES.length]!;
      const worker = r.spawn([...BASE, "--shutdown-grace-ms", String(grace)]);
      graceOf.set(worker.pid, grace);
      return worker;
    };
    const pool = Array.from({ length: WORKERS }, spawn);
    await Promise.all(pool.map((w) => w.ready()));
    await r.enqueue(
      Array.from({ length: JOBS }, (_, i) => ({
        job: "chaos.work" as const,
        payload: { sleepMs: between(1_500, 3_000), ignoreSignal: i % 2 === 0, track: true },
      })),
    );
    const enqueuedAt = Date.now();
    r.startLeaseMonitor();

    const stopped: Array<{ pid: number; grace: number; exitMs: number; code: number | null }> = [];
    let stop = false;
    const terminator = (async () => {
      while (!stop) {
        await sleep(between(2_000, 3_000));
        const [{ left }] = (await r.q<{ left: number }>(
          `SELECT count(*)::int AS left FROM ${r.s}.jobs WHERE status IN ('queued', 'retrying', 'running')`,
        )) as [{ left: number }];
        if (stop || left < JOBS * 0.1) break;
        // Alternate short and long graces among the victims, so both kinds of stop happen.
        const wanted = GRACES[stopped.length % GRACES.length]!;
        const candidates = pool.map((w, i) => i).filter((i) => graceOf.get(pool[i]!.pid) === wanted);
        const index = candidates.length > 0 ? candidates[between(0, candidates.length - 1)]! : between(0, pool.length - 1);
        const victim = pool[index]!;
        const signalledAt = Date.now();
        victim.signal("SIGTERM");
        pool[index] = spawn(); // the replacement starts while the old one drains
        const exit = await victim.waitForExit(graceOf.get(victim.pid)! + EXIT_SLACK_MS + 5_000);
        stopped.push({ pid: victim.pid, grace: graceOf.get(victim.pid)!, exitMs: Date.now() - signalledAt, code: exit.code });
        await pool[index]!.ready();
      }
    })();

    let drainSeconds: number;
    try {
      drainSeconds = await r.drained(DRAIN_BOUND_MS, enqueuedAt);
    } finally {
      stop = true;
      await terminator;
    }
    const maxOverdueMs = await r.stopLeaseMonitor();
    await r.stopWorkers();

    expect(stopped.length).toBeGreaterThanOrEqual(4);
    for (const s of stopped) {
      expect(s.code).toBe(0);
      expect(s.exitMs).toBeLessThan(s.grace + EXIT_SLACK_MS);
    }
    // A shutdown hands back; it never lets a lease run out and never fails a job.
    const outcomes = await r.q<{ outcome: string; n: number }>(
      `SELECT outcome, count(*)::int AS n FROM ${r.s}.job_attempts WHERE outcome NOT IN ('succeeded', 'interrupted') GROUP BY outcome`,
    );
    expect(outcomes).toEqual([]);
    const [handback] = await r.q<{ obedient: number; ignoring: number }>(
      `SELECT count(*) FILTER (WHERE NOT coalesce((j.payload->>'ignoreSignal')::boolean, false))::int AS obedient,
              count(*) FILTER (WHERE (j.payload->>'ignoreSignal')::boolean)::int AS ignoring
         FROM ${r.s}.job_attempts AS e JOIN ${r.s}.jobs AS j ON j.id = e.job_id WHERE e.outcome = 'interrupted'`,
    );
    const [{ n: shutdownAborts }] = (await r.q<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${r.s}.chaos_ledger WHERE event = 'abort' AND reason = 'WorkerShutdownError'`,
    )) as [{ n: number }];

    const verdict = await r.judge({ allowDuplicates: ["after_shutdown_handback"] });
    const short = stopped.filter((s) => s.grace === GRACES[0]);
    const long = stopped.filter((s) => s.grace === GRACES[1]);
    summary(
      "sigterm",
      verdict,
      `${stopped.length} SIGTERMs (${short.length} with grace ${GRACES[0]! / 1000} s, ${long.length} with ${GRACES[1]! / 1000} s)`,
      drainSeconds,
      `${handback!.obedient + handback!.ignoring} attempts handed back (${handback!.ignoring} of handlers ignoring their signal), ` +
        `${shutdownAborts} handlers saw WorkerShutdownError, slowest exit ${(Math.max(...stopped.map((s) => s.exitMs)) / 1000).toFixed(1)} s; ` +
        `longest overdue lease ${(maxOverdueMs / 1000).toFixed(1)} s`,
    );
    expect(verdict.violations).toEqual([]);
    expect(r.logProblems()).toEqual([]);
    expect(verdict.statuses).toEqual({ succeeded: JOBS });
    // Both kinds of handler were cut off by a short grace and handed back.
    expect(handback!.obedient).toBeGreaterThan(0);
    expect(handback!.ignoring).toBeGreaterThan(0);
    expect(maxOverdueMs).toBeLessThan(10_000);
    expect(await deadlocks(file.database.url), "deadlocks PostgreSQL counted in this scenario's database").toBe(deadlocksBefore);
  }, 240_000);

  it("a job cancelled while running, then handed back by a shutdown, ends cancelled with its attempt counted", async () => {
    const r = await new ChaosRun("sigterm-cancel", file.database.url).setup();
    try {
      const worker = r.spawn([...BASE, "--shutdown-grace-ms", "500"]);
      await worker.ready();
      const [id] = await r.enqueue([{ job: "chaos.work", payload: { sleepMs: 30_000, ignoreSignal: true, track: true } }]);
      await waitFor("the job to start", async () => (await r.q(`SELECT 1 FROM ${r.s}.chaos_ledger WHERE job_id = $1 AND event = 'start'`, [id])).length === 1, 20_000);
      expect((await r.conveyor.cancel(id!)).outcome).toBe("cancel_requested");
      // The cancel's NOTIFY (or the next heartbeat) aborts the handler's signal (it ignores it and keeps running).
      await waitFor(
        "the handler to see the cancellation",
        async () => (await r.q(`SELECT 1 FROM ${r.s}.chaos_ledger WHERE job_id = $1 AND event = 'abort' AND reason = 'JobCancelledError'`, [id])).length === 1,
        10_000,
      );
      worker.signal("SIGTERM");
      expect(await worker.waitForExit(10_000)).toEqual({ code: 0, signal: null });

      const verdict = await r.judge();
      const [job] = await r.q<{ status: string; attempts: number }>(`SELECT status, attempts FROM ${r.s}.jobs WHERE id = $1`, [id]);
      const executions = await r.q<{ outcome: string }>(`SELECT outcome FROM ${r.s}.job_attempts WHERE job_id = $1`, [id]);
      console.log(
        `[chaos] sigterm-cancel: 1 job, cancel requested then SIGTERM past a 0.5 s grace: status ${job!.status}, ` +
          `attempts ${job!.attempts}, executions [${executions.map((e) => e.outcome).join(", ")}]`,
      );
      expect(job!.status).toBe("cancelled");
      expect(executions).toEqual([{ outcome: "cancelled" }]);
      // The execution is recorded as a cancelled attempt, which counts (docs/jobs.md: the job lifecycle table).
      expect(job!.attempts).toBe(1);
      expect(verdict.violations).toEqual([]);
    } finally {
      await r.cleanup();
    }
  }, 60_000);
});
