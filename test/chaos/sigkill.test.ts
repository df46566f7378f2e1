/**
 * Scenario 1: random SIGKILL of worker processes while 20,000 jobs run, one
 * each time another tenth of the jobs has finished; each killed worker is replaced after a random pause, and a
 * few hundred jobs are cancelled along the way. Nothing may be lost: every
 * job ends terminal within the bound, at most one execution per job
 * succeeds, and every repeated side effect belongs to an execution that
 * ended in a lease expiry (its worker died) or a cancellation.
 */
import { describe, expect, it } from "vitest";
import type { CliProcess } from "../worker-processes/process-helpers.js";
import { between, chaosFile, deadlocks, sleep, summary } from "./harness.js";

const JOBS = 20_000;
const WORKERS = 4;
const CANCELS = 200;
/** One worker is killed each time this share of the jobs has finished (up to 97 %). */
const KILL_EVERY = 0.1;
/** Everything must be terminal this long after the first enqueue. */
const DRAIN_BOUND_MS = 200_000;
/** A job may sit `running` past its lease at most this long (lease 3 s, sweep every 1 s ± 25 %, restarts sweep at once). */
const OVERDUE_BOUND_MS = 10_000;
const ARGS = ["--concurrency", "20", "--lease-ms", "3000", "--heartbeat-ms", "1000", "--reclaim-interval-ms", "1000", "--poll-interval-ms", "200"];

const file = chaosFile();

describe("chaos: SIGKILL", () => {
  it(`loses nothing when workers are SIGKILLed throughout ${JOBS} jobs`, async () => {
    const r = await file.start("sigkill");
    const deadlocksBefore = await deadlocks(file.database.url);
    const pool: (CliProcess | null)[] = Array.from({ length: WORKERS }, () => r.spawn(ARGS));
    await Promise.all(pool.map((w) => w!.ready()));

    const ids = await r.enqueue(Array.from({ length: JOBS }, (_, i) => ({ job: "chaos.work" as const, payload: { sleepMs: i % 4 } })));
    const enqueuedAt = Date.now();
    r.startLeaseMonitor();

    let kills = 0;
    let cancelled = 0;
    let stop = false;
    // Cancels, spread over the run: queued jobs are cancelled at once, running ones ask their handler.
    const cancelLoop = (async () => {
      const picks = Array.from({ length: CANCELS }, () => ids[between(0, ids.length - 1)]!);
      for (const id of picks) {
        if (stop) break;
        const { outcome } = await r.conveyor.cancel(id);
        if (outcome !== "already_terminal") cancelled += 1;
        await sleep(between(20, 150));
      }
    })();
    // The killer is paced by progress, not by the clock, so a fast machine
    // gets as many kills as a slow one: each time another tenth of the jobs
    // has finished, one random started worker dies, and its replacement starts
    // 0-0.5 s later in the background. (Paced by the clock, every 0.5-1.5 s,
    // a quiet machine drained the 20,000 jobs after only four kills.)
    const replacements: Promise<void>[] = [];
    const killLoop = (async () => {
      let nextKillAtDone = KILL_EVERY;
      while (!stop) {
        await sleep(50);
        if (stop) break;
        const [{ left }] = (await r.q<{ left: number }>(
          `SELECT count(*)::int AS left FROM ${r.s}.jobs WHERE status IN ('queued', 'retrying', 'running')`,
        )) as [{ left: number }];
        if (left < JOBS * 0.03) break; // the tail drains in peace: faults are injected during the run, not after it
        if (JOBS - left < nextKillAtDone * JOBS) continue;
        const live = pool.flatMap((w, index) => (w ? [index] : []));
        if (live.length === 0) continue;
        nextKillAtDone += KILL_EVERY;
        const index = live[between(0, live.length - 1)]!;
        const victim = pool[index]!;
        pool[index] = null;
        victim.signal("SIGKILL");
        await victim.waitForExit(10_000);
        kills += 1;
        replacements.push(
          (async () => {
            await sleep(between(0, 500));
            const replacement = r.spawn(ARGS);
            await replacement.ready();
            pool[index] = replacement; // killable once started: a kill before "worker started" would fail ready()
          })(),
        );
      }
      await Promise.all(replacements);
    })();

    try {
      const drainSeconds = await r.drained(DRAIN_BOUND_MS, enqueuedAt);
      stop = true;
      await Promise.all([killLoop, cancelLoop]);
      const maxOverdueMs = await r.stopLeaseMonitor();
      await r.stopWorkers();
      const verdict = await r.judge({ allowDuplicates: ["after_lease_expiry", "late_stale_owner", "then_cancelled"] });
      summary(
        "sigkill",
        verdict,
        `${kills} SIGKILLs (and restarts), ${cancelled} cancels`,
        drainSeconds,
        `longest overdue lease ${(maxOverdueMs / 1000).toFixed(1)} s`,
      );
      expect(verdict.violations).toEqual([]);
      expect(r.logProblems()).toEqual([]);
      expect(verdict.jobs).toBe(JOBS);
      expect(kills).toBeGreaterThanOrEqual(5);
      // The kills really cost work: some executions ended with an expired lease.
      expect(verdict.outcomes.lease_expired ?? 0).toBeGreaterThan(0);
      expect(maxOverdueMs).toBeLessThan(OVERDUE_BOUND_MS);
      expect(await deadlocks(file.database.url), "deadlocks PostgreSQL counted in this scenario's database").toBe(deadlocksBefore);
    } finally {
      stop = true;
      await Promise.allSettled([killLoop, cancelLoop]);
    }
  }, 300_000);
});
