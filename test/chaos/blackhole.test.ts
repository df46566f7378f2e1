/**
 * Scenario 4: a network partition of one worker. Worker A reaches
 * PostgreSQL (for Conveyor's pool, its LISTEN connection and its handlers'
 * ledger alike) through the fault proxy; workers B and C connect directly.
 * First the proxy slows A's network (every chunk delayed 50 ms each way,
 * for 3 s): slow is not lost, so no lease may expire. (At 200 ms each way a
 * renewal that must first open a pool connection, four round trips with
 * SCRAM, misses a 2 s lease: the lease must outlast a connection set-up.) Then, while A holds jobs, the
 * proxy black-holes its connections (accepts, never answers) for three
 * leases, then heals and delivers everything held, late.
 *
 * A must abort its handlers on its own once the lease can no longer have
 * been renewed (LeaseLostError: "could not be renewed in time"), write
 * nothing that counts (its late completions are fenced, its late side
 * effects are recorded as a stale owner's), and carry on working after the
 * heal. B and C reclaim and finish A's jobs meanwhile.
 */
import { describe, expect, it } from "vitest";
import {
  between,
  DATABASE_FENCE,
  dbNow,
  deadlocks,
  LOCAL_FENCE,
  openExecutionsAt,
  proxiedChaosFile,
  sleep,
  summary,
  viaPort,
} from "./harness.js";
import { waitFor } from "../helpers/wait-for.js";

const FIRST_JOBS = 300;
const LATER_JOBS = 200;
const LEASE_MS = 2_000;
const BLACKHOLE_MS = 3 * LEASE_MS;
const DELAY = { ms: 50, forMs: 3_000 };
const DRAIN_BOUND_MS = 90_000;
const ARGS = ["--concurrency", "4", "--lease-ms", String(LEASE_MS), "--heartbeat-ms", "500", "--reclaim-interval-ms", "500", "--poll-interval-ms", "100"];
const LATE_CLAIM = "the claim was answered after the lease could have expired; not starting the job (the reclaim sweep returns it)";

const file = proxiedChaosFile();

describe("chaos: one worker black-holed past its lease", () => {
  it("aborts the partitioned worker's handlers locally, fences its late writes, and it resumes after the heal", async () => {
    const r = await file.start("blackhole");
    const deadlocksBefore = await deadlocks(file.database.url);
    const partitioned = r.spawn(ARGS, { databaseUrl: viaPort(file.database.url, file.proxy.port) });
    await partitioned.ready();
    // A sentinel only A can have claimed (it starts alone): its first run sleeps through the whole
    // partition, so at least one handler is surely still running when A must give up its lease.
    const [sentinel] = await r.enqueue([{ job: "chaos.work", payload: { firstRunSleepMs: 60_000, sleepMs: 50 } }]);
    await waitFor("A to start the sentinel", async () => (await r.q(`SELECT 1 FROM ${r.s}.chaos_ledger WHERE job_id = $1`, [sentinel])).length > 0, 20_000);
    const direct = [r.spawn(ARGS), r.spawn(ARGS)];
    const workers = [partitioned, ...direct];
    await Promise.all(direct.map((w) => w.ready()));
    await r.enqueue(Array.from({ length: FIRST_JOBS }, () => ({ job: "chaos.work" as const, payload: { sleepMs: between(200, 600) } })));
    const enqueuedAt = Date.now();
    r.startLeaseMonitor();

    // A slow network: every chunk either way held 50 ms. Renewals take longer, and still arrive in time.
    file.proxy.set({ kind: "delay", ms: DELAY.ms });
    await sleep(DELAY.forMs);
    file.proxy.set({ kind: "pass" });
    const [{ n: lostToDelay }] = (await r.q<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${r.s}.job_attempts WHERE worker_id LIKE '%-' || $1::text || '-%' AND outcome = 'lease_expired'`,
      [partitioned.pid],
    )) as [{ n: number }];
    const [{ n: doneWhileSlow }] = (await r.q<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${r.s}.job_attempts WHERE worker_id LIKE '%-' || $1::text || '-%' AND outcome = 'succeeded'`,
      [partitioned.pid],
    )) as [{ n: number }];
    expect(lostToDelay).toBe(0);

    await waitFor(
      "the partitioned worker to hold three jobs",
      async () => (await openExecutionsAt(r, partitioned.pid, await dbNow(r))).length >= 3,
      20_000,
      20,
    );
    file.proxy.set({ kind: "blackhole" });
    const cutAtMs = Date.now();
    await sleep(300); // whatever A sent before the cut has landed by now; nothing after it can
    const cutAt = await dbNow(r);
    const held = await openExecutionsAt(r, partitioned.pid, cutAt);
    const [sentinelRun] = await r.q<{ id: string }>(`SELECT id FROM ${r.s}.job_attempts WHERE job_id = $1`, [sentinel]);
    expect(held.map((e) => e.id)).toContain(sentinelRun!.id);
    let healedAt: Date;
    try {
      // Cut off, A still logs (stdout is not the network): it gives the sentinel up on its own.
      await waitFor(
        "A to abandon the sentinel's attempt",
        () => partitioned.logs().some((line) => line.msg === LOCAL_FENCE && line.executionId === sentinelRun!.id),
        BLACKHOLE_MS,
      );
      await new Promise((wake) => setTimeout(wake, Math.max(0, cutAtMs + BLACKHOLE_MS - Date.now())));
    } finally {
      file.proxy.set({ kind: "pass" });
      healedAt = await dbNow(r);
    }
    // Meanwhile B and C reclaimed what A held.
    for (const execution of held) {
      const [row] = await r.q<{ outcome: string; finished_at: Date }>(`SELECT outcome, finished_at FROM ${r.s}.job_attempts WHERE id = $1`, [
        execution.id,
      ]);
      expect(row!.outcome).toBe("lease_expired");
      expect(row!.finished_at.getTime()).toBeLessThan(healedAt.getTime());
    }

    // After the heal A works again: later jobs are shared with it.
    await r.enqueue(Array.from({ length: LATER_JOBS }, () => ({ job: "chaos.work" as const, payload: { sleepMs: between(20, 100) } })));
    const drainSeconds = await r.drained(DRAIN_BOUND_MS, enqueuedAt, () => workers);
    const maxOverdueMs = await r.stopLeaseMonitor();
    await new Promise((wake) => setTimeout(wake, 500));
    const [{ n: afterHeal }] = (await r.q<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${r.s}.job_attempts WHERE worker_id LIKE '%-' || $1::text || '-%' AND outcome = 'succeeded' AND started_at > $2`,
      [partitioned.pid, healedAt],
    )) as [{ n: number }];
    await r.stopWorkers();
    for (const w of workers) expect(w.exit, w.output()).toEqual({ code: 0, signal: null });

    // Every attempt A held when cut off ended in a fence: handlers still running were abandoned by
    // A's lease keeper; completions already queued (a handler done, its write held) were refused late;
    // a claim whose answer was held by the cut arrived past its lease, and its job never started.
    const lines = partitioned.logs();
    const fences = [LOCAL_FENCE, DATABASE_FENCE, LATE_CLAIM];
    let localFences = 0;
    let databaseFences = 0;
    let lateClaims = 0;
    for (const { id } of held) {
      const fence = lines.find((line) => line.executionId === id && fences.includes(line.msg as string));
      expect(fence, `no fence logged for execution ${id}`).toBeDefined();
      if (fence!.msg === LOCAL_FENCE) localFences += 1;
      else if (fence!.msg === DATABASE_FENCE) databaseFences += 1;
      else lateClaims += 1;
    }
    const sentinelFence = lines.find((line) => line.msg === LOCAL_FENCE && line.executionId === sentinelRun!.id);
    expect(sentinelFence?.reason).toBe("the lease expired: it could not be renewed in time");
    // Its handlers saw their signal abort with LeaseLostError (recorded through the healed proxy, late).
    const aborts = await r.q<{ reason: string; detail: string }>(
      `SELECT reason, detail FROM ${r.s}.chaos_ledger WHERE pid = $1 AND event = 'abort' AND execution_id = ANY($2::uuid[])`,
      [partitioned.pid, held.map((e) => e.id)],
    );
    expect(aborts.length).toBeGreaterThan(0); // the sentinel's, at least
    for (const abort of aborts) expect(abort).toEqual({ reason: "LeaseLostError", detail: "the lease expired: it could not be renewed in time" });
    // Side effects committed by a stale owner came from A alone, and from the attempts it lost.
    const stale = await r.q<{ pid: number; outcome: string }>(
      `SELECT l.pid, e.outcome FROM ${r.s}.chaos_ledger AS l JOIN ${r.s}.job_attempts AS e ON e.id = l.execution_id
        WHERE l.event = 'effect' AND NOT l.owner_current`,
    );
    for (const row of stale) expect(row).toEqual({ pid: partitioned.pid, outcome: "lease_expired" });
    expect(afterHeal, "the partitioned worker did no work after the heal").toBeGreaterThan(0);

    const verdict = await r.judge({ allowDuplicates: ["after_lease_expiry", "late_stale_owner"] });
    summary(
      "blackhole",
      verdict,
      `1 of 3 workers delayed ${DELAY.ms} ms a chunk for ${DELAY.forMs / 1000} s (${doneWhileSlow} jobs done, no lease lost), ` +
        `then black-holed ${BLACKHOLE_MS / 1000} s (lease ${LEASE_MS / 1000} s) holding ${held.length} jobs`,
      drainSeconds,
      `${localFences} attempts abandoned by its lease keeper, ${databaseFences} completions refused by the database, ` +
        `${lateClaims} claims answered too late and not started, ` +
        `${stale.length} late side effects from it (held bytes delivered on heal), ${afterHeal} jobs done by it after the heal; ` +
        `longest overdue lease ${(maxOverdueMs / 1000).toFixed(1)} s`,
    );
    expect(verdict.violations).toEqual([]);
    expect(r.logProblems()).toEqual([]);
    expect(verdict.statuses).toEqual({ succeeded: 1 + FIRST_JOBS + LATER_JOBS });
    expect(maxOverdueMs).toBeLessThan(10_000);
    expect(await deadlocks(file.database.url), "deadlocks PostgreSQL counted in this scenario's database").toBe(deadlocksBefore);
  }, 180_000);
});
