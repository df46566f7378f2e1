/**
 * Scenario 7: the reclaim sweep racing a completion at the worst moment,
 * with real worker processes and deterministic pause points (transactions
 * the test holds open on its own connection):
 *
 * a. the completion is in flight (its job row written, not committed) when
 *    the lease runs out and sweeps run: every sweep skips the row, the
 *    completion commits and wins; no `lease_expired` is recorded;
 * b. the sweep is in flight (the job locked and marked reclaimed, not
 *    committed) when a frozen worker wakes and sends its completion: the
 *    completion waits for the sweep, then matches no row (fenced); the job
 *    runs again and succeeds once;
 * c. four sweeper processes, frozen while 3,000 leases expire and thawed
 *    together, race over them (six batches' worth): each is reclaimed
 *    exactly once, then every job runs and succeeds.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { JobStore } from "../../packages/core/src/store/job-store.js";
import { bindQueries } from "../../packages/core/src/store/queries.js";
import { ChaosRun, type ChaosDatabase, createChaosDatabase, DATABASE_FENCE, deadlocks, sleep, summary } from "./harness.js";
import { waitFor } from "../helpers/wait-for.js";

const LEASE_MS = 2_000;
/** Runs jobs, never sweeps on its own after the start-up sweep (the test holds the sweep). */
const RUNNER = ["--concurrency", "2", "--lease-ms", String(LEASE_MS), "--heartbeat-ms", "500", "--reclaim-interval-ms", "600000", "--poll-interval-ms", "100"];
/** Sweeps every 100-200 ms and runs nothing (it serves a queue no job uses). */
const SWEEPER = ["--queues", "sweep-only", "--lease-ms", String(LEASE_MS), "--heartbeat-ms", "500", "--reclaim-interval-ms", "150", "--poll-interval-ms", "1000"];
const RACERS = 3_000;

let database: ChaosDatabase;
let run: ChaosRun | null = null;
let tempDir: string | null = null;

beforeAll(async () => {
  database = await createChaosDatabase();
  tempDir = mkdtempSync(join(tmpdir(), "conveyor-chaos-race-"));
});

afterAll(async () => {
  await run?.cleanup();
  await database?.drop();
  if (tempDir) rmSync(tempDir, { recursive: true, force: true });
});

/** A completion statement from a worker's pool (application_name 'conveyor') waiting for a row lock. */
function waitingOnCompletion(r: ChaosRun): Promise<boolean> {
  return r.exists(
    `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'conveyor'
        AND wait_event_type = 'Lock' AND query LIKE '%status = ''succeeded''%'`,
  );
}

function history(r: ChaosRun, jobId: string): Promise<Array<{ outcome: string }>> {
  return r.q(`SELECT outcome FROM ${r.s}.job_attempts WHERE job_id = $1 ORDER BY started_at, id`, [jobId]);
}

describe("chaos: the reclaim sweep racing a completion", () => {
  it("skips a completion in flight, fences a completion under an in-flight sweep, never double-reclaims", async () => {
    const r = (run = await new ChaosRun("reclaim-race", database.url).setup());
    const deadlocksBefore = await deadlocks(database.url);
    const startedAt = Date.now();
    const runner = r.spawn(RUNNER);
    await runner.ready();
    const holder: pg.PoolClient = await r.conveyor.pool.connect();
    // On the holder: the sweep's two statements in the test's open transaction; on the pool: a transaction of its own.
    const sweepOn = (db: pg.PoolClient | pg.Pool) => new JobStore(r.conveyor.pool, bindQueries(r.schema), r.schema).jobReclaimExpired(100, db);
    let sweepsSkipped = 0;

    try {
      // (b) first, while no other process sweeps: a frozen runner's completion under an in-flight sweep.
      const release = join(tempDir!, "release");
      const [frozenJob] = await r.enqueue([{ job: "chaos.work", payload: { firstRunBlockUntilFile: release } }]);
      await waitFor("the runner to start the job", () => r.exists(`SELECT 1 FROM ${r.s}.chaos_ledger WHERE job_id = $1`, [frozenJob]), 20_000);
      await waitFor(
        "the frozen runner's lease to expire",
        () => r.exists(`SELECT 1 FROM ${r.s}.jobs WHERE id = $1 AND status = 'running' AND lease_expires_at < now()`, [frozenJob]),
        10_000,
        50,
      );
      await holder.query("BEGIN");
      const swept = await sweepOn(holder); // pause point: the job is locked and marked reclaimed, not committed
      expect(swept.map((job) => job.id)).toEqual([frozenJob]);
      writeFileSync(release, ""); // the runner wakes: its completion goes out before any timer of its runs
      await waitFor("the runner's completion to wait on the sweep's lock", () => waitingOnCompletion(r), 10_000, 20);
      await holder.query("COMMIT");
      await runner.waitForLog(DATABASE_FENCE, 10_000);
      await waitFor("the job to run again and succeed", () => r.exists(`SELECT 1 FROM ${r.s}.jobs WHERE id = $1 AND status = 'succeeded'`, [frozenJob]), 20_000);
      const frozenHistory = await history(r, frozenJob!);
      expect(frozenHistory.map((e) => e.outcome)).toEqual(["lease_expired", "succeeded"]);

      // (a) a completion in flight while its lease runs out and sweeps run, from a sweeper process and from the test.
      const sweeper = r.spawn(SWEEPER);
      await sweeper.ready();
      const [slowJob] = await r.enqueue([{ job: "chaos.work", payload: { sleepMs: 800, track: true } }]);
      await waitFor("the runner to start the job", () => r.exists(`SELECT 1 FROM ${r.s}.chaos_ledger WHERE job_id = $1 AND event = 'start'`, [slowJob]), 20_000);
      const [started] = await r.q<{ execution_id: string }>(
        `SELECT execution_id FROM ${r.s}.chaos_ledger WHERE job_id = $1 AND event = 'start'`,
        [slowJob],
      );
      await holder.query("BEGIN");
      // Pause point: today's day of history locked against inserts, so the completion deletes the job's
      // live row (holding it), then waits to insert its history row. Released by the rollback below.
      const [today] = await r.q<{ day: string }>(`SELECT to_char(now() AT TIME ZONE 'UTC', 'YYYYMMDD') AS day`);
      await holder.query(`LOCK TABLE ${r.s}.job_history_${today!.day} IN SHARE MODE`);
      expect(started!.execution_id).toBeTruthy();
      await waitFor("the completion to wait mid-statement", () => waitingOnCompletion(r), 10_000, 20);
      await waitFor(
        "the lease of the job being completed to run out",
        () => r.exists(`SELECT 1 FROM ${r.s}.jobs WHERE id = $1 AND lease_expires_at < now()`, [slowJob]),
        10_000,
        50,
      );
      for (let i = 0; i < 5; i += 1) {
        expect(await sweepOn(r.conveyor.pool)).toEqual([]); // SKIP LOCKED: the row being completed is not ours to judge
        sweepsSkipped += 1;
        await sleep(200); // and the sweeper process sweeps in between
      }
      await holder.query("ROLLBACK");
      await waitFor("the completion to land", () => r.exists(`SELECT 1 FROM ${r.s}.jobs WHERE id = $1 AND status = 'succeeded'`, [slowJob]), 10_000);
      expect(await sweepOn(r.conveyor.pool)).toEqual([]);
      const slowHistory = await history(r, slowJob!);
      expect(slowHistory.map((e) => e.outcome)).toEqual(["succeeded"]);

      // (c) four sweepers racing over the expired leases of a worker that vanished.
      const sweepers = [sweeper, ...[1, 2, 3].map(() => r.spawn(SWEEPER))];
      await Promise.all(sweepers.map((w) => w.ready()));
      runner.signal("SIGSTOP"); // nobody claims them back before the sweepers are done
      for (const w of sweepers) w.signal("SIGSTOP"); // thawed together below: their sweeps are all due at once
      try {
        await r.enqueue(Array.from({ length: RACERS }, () => ({ job: "chaos.work" as const, payload: {} })));
        const claimed = await new JobStore(r.conveyor.pool, bindQueries(r.schema), r.schema).jobClaim("vanished-worker", RACERS, ["chaos.work"], null, 1);
        expect(claimed).toHaveLength(RACERS);
        await sleep(50);
        for (const w of sweepers) w.signal("SIGCONT");
        await waitFor(
          "the sweepers to reclaim every lease",
          async () => (await r.q(`SELECT 1 FROM ${r.s}.jobs WHERE status = 'running'`)).length === 0,
          20_000,
          100,
        );
      } finally {
        for (const w of [runner, ...sweepers]) w.signal("SIGCONT");
      }
      const [race] = await r.q<{ reclaimed: number; jobs: number; twice: number }>(
        `SELECT count(*)::int AS reclaimed, count(DISTINCT job_id)::int AS jobs,
                (SELECT count(*)::int FROM (SELECT job_id FROM ${r.s}.job_attempts WHERE worker_id = 'vanished-worker'
                   GROUP BY job_id HAVING count(*) FILTER (WHERE outcome = 'lease_expired') <> 1) AS bad) AS twice
           FROM ${r.s}.job_attempts WHERE worker_id = 'vanished-worker' AND outcome = 'lease_expired'`,
      );
      expect(race).toEqual({ reclaimed: RACERS, jobs: RACERS, twice: 0 });
      const shares = sweepers
        .map((w) => w.logs().reduce((sum, line) => sum + (line.msg === "reclaimed jobs with expired leases" ? Number(line.count) : 0), 0))
        .filter((n) => n > 0);

      // Counted from the start of the scenario, all three stages: about 25 s on a quiet machine, 50 s on a loaded one.
      const drainSeconds = await r.drained(120_000, startedAt, () => [runner, ...sweepers]);
      await r.stopWorkers();
      const verdict = await r.judge({ allowDuplicates: ["late_stale_owner"] });
      summary(
        "reclaim-race",
        verdict,
        `completion-vs-sweep held both ways, ${sweepsSkipped} sweeps over a completion in flight, ${sweepers.length} sweepers racing over ${RACERS} expired leases`,
        drainSeconds,
        `in-flight completion won (history [${slowHistory.map((e) => e.outcome).join(", ")}]), ` +
          `completion under an in-flight sweep fenced (history [${frozenHistory.map((e) => e.outcome).join(", ")}]), ` +
          `${race!.reclaimed} leases reclaimed once each, shared ${shares.join("/")} by the sweepers`,
      );
      expect(verdict.violations).toEqual([]);
      expect(r.logProblems()).toEqual([]);
      expect(verdict.statuses).toEqual({ succeeded: RACERS + 2 });
      expect(shares.length).toBeGreaterThanOrEqual(2);
      // The frozen runner's side effect landed after the sweep: recorded as a stale owner's, the only one.
      expect(verdict.duplicatesByClass).toEqual({ late_stale_owner: 1 });
      expect(await deadlocks(database.url), "deadlocks PostgreSQL counted in this scenario's database").toBe(deadlocksBefore);
    } finally {
      await holder.query("ROLLBACK").catch(() => {});
      holder.release();
    }
  }, 180_000);
});
