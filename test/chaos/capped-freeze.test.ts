/**
 * Scenario: one worker is frozen (SIGSTOP) at the moment it holds a cap's
 * lock, a queue cap in one test and a tenant cap in the other, and stays
 * frozen well past its lease. The other workers must keep completing jobs
 * of the capped queue (tenant) and of the uncapped one the whole time, the
 * cap must never be exceeded, a second into the freeze the victim's
 * backends must hold no cap lock (the server finished its claim), and after
 * SIGCONT every job finishes and the judge passes. Issue 29: a capped claim used to be BEGIN, lock the
 * settings row FOR UPDATE, claim, COMMIT, four round trips with the lock
 * held between them, so a worker frozen inside one kept the lock (its
 * backend `idle in transaction`) and every other worker's capped claims,
 * and the claim rounds behind them, waited on it until it woke: the whole
 * fleet stalled. Now each capped claim is one call of a function the
 * server runs to its commit whatever the client does.
 *
 * Catching the moment: the victim connects with an application_name of
 * its own (a URL parameter overrides the pool's), and a probe polls
 * pg_locks every few ms for its backend holding the RowShareLock that
 * `FOR UPDATE` takes on the settings table; then the victim gets SIGSTOP.
 * If its lock is still held once it is frozen (the old transaction, left
 * open), or the probe saw it inside the one-call claim (the new code,
 * whose server side finishes it), it counts as caught; otherwise it gets
 * SIGCONT and the probe tries again, for up to 10 s. Not caught by then,
 * it is frozen anyway and the summary says so: the assertions hold either
 * way.
 *
 * The capped class is kept at a backlog; uncapped jobs arrive at a steady
 * trickle (about 25 a second) that the workers keep up with, so their claim
 * rounds have slots left for the capped claim, as in any fleet that is not
 * saturated. (A round fills its slots from the uncapped queues first and
 * tries the capped queue with what is left: a worker whose uncapped backlog
 * filled every round never reached the stuck lock, and kept going.)
 * Queue cap: the victim and one other worker serve only the capped queue,
 * two serve both (eight slots each). Tenant cap: every claim is the
 * tenant-fair one, which takes every capped tenant's lock, so all four
 * serve both tenants.
 */
import pg from "pg";
import { describe, expect, it } from "vitest";
import type { CliProcess } from "../worker-processes/process-helpers.js";
import { between, type ChaosRun, chaosFile, dbNow, sleep, summary } from "./harness.js";

const CAP = 3;
const LEASE_MS = 2_000;
const FREEZE_MS = 17_000;
const CATCH_MS = 10_000;
/** Skipped at the start of the freeze: the jobs already running when it began finish in it. */
const SETTLE_MS = 1_000;
const SLICE_MS = 5_000;
const SLICES = 3;
/** Completions by the other workers, in each class, in each 5 s slice of the freeze (typically dozens). */
const MIN_PER_SLICE = 3;
const DRAIN_BOUND_MS = 60_000;
const ARGS = ["--concurrency", "4", "--lease-ms", String(LEASE_MS), "--heartbeat-ms", "500", "--reclaim-interval-ms", "500", "--poll-interval-ms", "100"];
/** Capped jobs kept ready until the victim wakes. */
const BACKLOG = 60;
/** Uncapped jobs added per feed (every 200 ms), up to BACKLOG ready. */
const TRICKLE = 5;

interface Scenario {
  name: string;
  /** The jobs column that tells the classes apart. */
  column: "queue" | "tenant";
  settingsTable: "queue_settings" | "tenant_settings";
  /** The one-call claim (migration 012) that takes this cap's lock. */
  claimFunction: string;
  setCap(r: ChaosRun): Promise<unknown>;
  /** Enqueue options of a job in the capped (or the uncapped) class. */
  place(capped: boolean): { queue?: string; tenant?: string };
  /** Extra CLI arguments of worker i (0 is the victim). */
  workerArgs(i: number): string[];
}

const SCENARIOS: Scenario[] = [
  {
    name: "queue cap",
    column: "queue",
    settingsTable: "queue_settings",
    claimFunction: "job_claim_from_limited_queue",
    setCap: (r) => r.conveyor.queues.setLimits("capped", { concurrency: CAP }),
    place: (capped) => ({ queue: capped ? "capped" : "free" }),
    workerArgs: (i) => (i <= 1 ? ["--queues", "capped"] : ["--queues", "capped,free", "--concurrency", "8"]),
  },
  {
    name: "tenant cap",
    column: "tenant",
    settingsTable: "tenant_settings",
    claimFunction: "job_claim_fair",
    setCap: (r) => r.conveyor.queues.setTenantLimits("capped", { concurrency: CAP }),
    place: (capped) => ({ tenant: capped ? "capped" : "free" }),
    workerArgs: () => [],
  },
];

const file = chaosFile();

/** Backends of `application` holding the row-lock table lock `FOR UPDATE` takes on `relation`. */
const HOLDERS = `
  SELECT a.pid, a.state, left(a.query, 300) AS query
    FROM pg_locks AS l JOIN pg_stat_activity AS a ON a.pid = l.pid
   WHERE a.application_name = $1 AND l.locktype = 'relation' AND l.granted AND l.mode = 'RowShareLock'
     AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
     AND l.relation = $2::regclass`;

interface Catch {
  caught: boolean;
  how: string;
  tries: number;
  ms: number;
}

/** SIGSTOP `victim` while its backend holds the cap's lock (see the header); frozen on return whatever happened. */
async function freezeHoldingCapLock(r: ChaosRun, victim: CliProcess, application: string, scenario: Scenario): Promise<Catch> {
  const probe = new pg.Client({ connectionString: r.databaseUrl, application_name: "chaos-probe" });
  probe.on("error", () => {});
  await probe.connect();
  const relation = `${r.s}.${scenario.settingsTable}`;
  const started = Date.now();
  let tries = 0;
  try {
    while (Date.now() - started < CATCH_MS) {
      const { rows } = await probe.query<{ pid: number; state: string; query: string }>(HOLDERS, [application, relation]);
      if (rows.length === 0) {
        await sleep(2);
        continue;
      }
      victim.signal("SIGSTOP");
      tries += 1;
      const seen = rows[0]!;
      if (seen.query.includes(scenario.claimFunction)) {
        return { caught: true, how: `in its one claim call (backend ${seen.state} as the probe read it)`, tries, ms: Date.now() - started };
      }
      await sleep(300);
      const { rows: still } = await probe.query<{ state: string; query: string }>(HOLDERS, [application, relation]);
      if (still.length > 0) {
        return { caught: true, how: `holding the lock, its backend ${still[0]!.state} after "${still[0]!.query.replace(/\s+/g, " ").trim().slice(0, 60)}…"`, tries, ms: Date.now() - started };
      }
      victim.signal("SIGCONT"); // its transaction ended before the signal landed: try again
    }
    victim.signal("SIGSTOP");
    return { caught: false, how: `never seen holding the lock in ${CATCH_MS / 1000} s; frozen anyway`, tries, ms: Date.now() - started };
  } finally {
    await probe.end().catch(() => {});
  }
}

describe("chaos: a worker frozen holding a cap's lock", () => {
  for (const scenario of SCENARIOS) {
    it(`never stops the other workers (${scenario.name})`, async () => {
      const r = await file.start(`capped-freeze-${scenario.column}`);
      try {
        await scenario.setCap(r);
        const application = `victim-${scenario.column}-${process.pid}`;
        const victimUrl = new URL(r.databaseUrl);
        victimUrl.searchParams.set("application_name", application);
        const workers = [0, 1, 2, 3].map((i) =>
          r.spawn([...ARGS, ...scenario.workerArgs(i)], i === 0 ? { databaseUrl: victimUrl.toString(), env: { CHAOS_LEDGER_URL: r.databaseUrl } } : {}),
        );
        const [victim, ...others] = workers as [CliProcess, ...CliProcess[]];
        await Promise.all(workers.map((w) => w.ready()));
        const [named] = await r.q<{ n: number }>(
          "SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1 AND datname = current_database()",
          [application],
        );
        expect(named!.n, "the victim's connections carry its application_name").toBeGreaterThan(0);

        // Until the victim wakes: a backlog of capped jobs, and a trickle of uncapped ones.
        let enqueued = 0;
        const feed = async () => {
          for (const capped of [true, false]) {
            const where = scenario.place(capped);
            const [ready] = await r.q<{ n: number }>(
              `SELECT count(*)::int AS n FROM ${r.s}.jobs WHERE status IN ('queued', 'retrying') AND ${scenario.column} = $1`,
              [where[scenario.column]],
            );
            const missing = capped ? BACKLOG - ready!.n : Math.min(TRICKLE, BACKLOG - ready!.n);
            if (capped ? missing < BACKLOG / 2 : missing <= 0) continue;
            await r.conveyor.enqueueMany(
              Array.from({ length: missing }, () => ({ job: "chaos.work", payload: { sleepMs: between(100, 250) }, ...where })),
            );
            enqueued += missing;
          }
        };
        await feed();
        let feeding = true;
        const feeder = (async () => {
          while (feeding) {
            await feed();
            await sleep(200);
          }
        })().catch((error: unknown) => error);
        r.startLeaseMonitor();
        await sleep(1_500); // every worker busy in both classes

        const caught = await freezeHoldingCapLock(r, victim, application, scenario);
        let heldWhileFrozen: Array<{ state: string; query: string }> = [];
        let frozenAt: Date;
        let resumedAt: Date;
        try {
          frozenAt = await dbNow(r);
          const until = Date.now() + FREEZE_MS;
          // The server finishes a claim whatever its client does: a second into the freeze, the victim holds no cap lock.
          await sleep(1_000);
          heldWhileFrozen = await r.q<{ state: string; query: string }>(HOLDERS, [application, `${r.s}.${scenario.settingsTable}`]);
          while (Date.now() < until) {
            for (const w of others) if (!w.alive) throw new Error(`worker ${w.pid} exited: ${JSON.stringify(w.exit)}\n${w.output()}`);
            await sleep(500);
          }
          resumedAt = await dbNow(r);
        } finally {
          victim.signal("SIGCONT");
        }
        const resumed = Date.now();
        feeding = false;
        const feedError = await feeder;
        if (feedError) throw feedError;

        // Completions by the other workers in each slice of the freeze, by class.
        const windowStart = frozenAt.getTime() + SETTLE_MS;
        const finished = await r.q<{ class: string; finished_ms: number }>(
          `SELECT j.${scenario.column} AS class, extract(epoch FROM e.finished_at)::float8 * 1000 AS finished_ms
             FROM ${r.s}.job_attempts AS e JOIN ${r.s}.jobs AS j ON j.id = e.job_id
            WHERE e.outcome = 'succeeded' AND e.worker_id NOT LIKE '%-' || $1::text || '-%'
              AND e.finished_at >= $2 AND e.finished_at < $3`,
          [victim.pid, new Date(windowStart), resumedAt],
        );
        const slices = Array.from({ length: SLICES }, (_, i) => {
          const from = windowStart + i * SLICE_MS;
          const inSlice = finished.filter((f) => f.finished_ms >= from && f.finished_ms < from + SLICE_MS);
          return {
            capped: inSlice.filter((f) => f.class === "capped").length,
            free: inSlice.filter((f) => f.class === "free").length,
          };
        });
        expect(resumedAt.getTime() - windowStart).toBeGreaterThanOrEqual(SLICES * SLICE_MS);

        const drainSeconds = await r.drained(DRAIN_BOUND_MS, resumed, () => workers);
        const maxOverdueMs = await r.stopLeaseMonitor();
        await sleep(500); // the woken victim's fenced writes are logged
        await r.stopWorkers();
        for (const w of workers) expect(w.exit, w.output()).toEqual({ code: 0, signal: null });

        // The cap, from the database's own record: at each start of a capped attempt, the capped attempts begun and not yet over.
        const capped = await r.q<{ start: number; end: number | null }>(
          `SELECT extract(epoch FROM e.started_at)::float8 * 1e6 AS start, extract(epoch FROM e.finished_at)::float8 * 1e6 AS end
             FROM ${r.s}.job_attempts AS e JOIN ${r.s}.jobs AS j ON j.id = e.job_id
            WHERE j.${scenario.column} = 'capped' ORDER BY e.started_at`,
        );
        const overlaps = capped.map((e) => capped.filter((o) => o.start <= e.start && (o.end === null || o.end > e.start)).length);
        const peak = Math.max(...overlaps);
        const lockTimeouts = workers.flatMap((w) => w.logs()).filter((l) => String(l.msg).startsWith("a cap's lock was held too long")).length;

        const verdict = await r.judge({ allowDuplicates: ["after_lease_expiry", "late_stale_owner"] });
        summary(
          `capped-freeze (${scenario.name})`,
          verdict,
          `victim frozen ${((resumedAt.getTime() - frozenAt.getTime()) / 1000).toFixed(1)} s (lease ${LEASE_MS / 1000} s), ` +
            `${caught.caught ? "caught" : "NOT caught"} ${caught.how} after ${caught.tries} tries in ${(caught.ms / 1000).toFixed(1)} s`,
          drainSeconds,
          `others completed per 5 s of the freeze (capped/uncapped): ${slices.map((s) => `${s.capped}/${s.free}`).join(", ")}; ` +
            `peak capped concurrency ${peak} (cap ${CAP}); ${lockTimeouts} claim lock timeouts; longest overdue lease ${(maxOverdueMs / 1000).toFixed(1)} s`,
        );
        for (const [i, slice] of slices.entries()) {
          const when = `seconds ${(SETTLE_MS + i * SLICE_MS) / 1000}-${(SETTLE_MS + (i + 1) * SLICE_MS) / 1000} of the freeze`;
          expect(slice.capped, `capped jobs completed by the other workers in ${when}`).toBeGreaterThanOrEqual(MIN_PER_SLICE);
          expect(slice.free, `uncapped jobs completed by the other workers in ${when}`).toBeGreaterThanOrEqual(MIN_PER_SLICE);
        }
        expect(heldWhileFrozen, "cap locks the frozen victim's backends still held a second into the freeze").toEqual([]);
        expect(peak, "capped attempts running at once").toBeLessThanOrEqual(CAP);
        expect(verdict.violations).toEqual([]);
        expect(r.logProblems()).toEqual([]);
        expect(verdict.jobs).toBe(enqueued);
        expect(verdict.statuses).toEqual({ succeeded: enqueued });
        expect(maxOverdueMs).toBeLessThan(10_000);
      } finally {
        await r.cleanup();
      }
    }, 150_000);
  }
});
