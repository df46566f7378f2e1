/**
 * Scenario 8: handlers that misbehave, mixed into a run of ordinary jobs on
 * six worker processes that a supervisor restarts whenever one dies. Each
 * kind of misbehaviour has its own queue and pair of workers (which also run
 * ordinary jobs), so one misbehaving job cannot rewrite another's history
 * and each can be judged exactly:
 *
 * - throwing non-Errors (a string, a number, an object, null, undefined, an
 *   array): each attempt is recorded `failed` with a readable `NonError`, and
 *   the job is dead after its three attempts;
 * - never settling: the kind's time limit ends each attempt (`timeout`), and
 *   the job is dead after its two attempts;
 * - blocking the event loop for three leases on the first run: the worker
 *   can neither renew nor notice; the others reclaim and finish the job, and
 *   nothing the blocked worker writes on waking counts;
 * - calling process.exit on the first run: the worker dies, its jobs come
 *   back after the lease and finish elsewhere;
 * - calling process.exit on every run: each attempt takes a worker down; the
 *   job is dead after its three attempts (all `lease_expired`).
 */
import { describe, expect, it } from "vitest";
import type { ChaosPayload } from "../fixtures/chaos-jobs.js";
import type { CliProcess } from "../worker-processes/process-helpers.js";
import { between, chaosFile, deadlocks, type Enqueue, sleep, summary } from "./harness.js";

const ORDINARY = 200;
const LEASE_MS = 2_000;
const BUSY_MS = 3 * LEASE_MS;
const DRAIN_BOUND_MS = 90_000;
const TIMING = ["--lease-ms", String(LEASE_MS), "--heartbeat-ms", "500", "--reclaim-interval-ms", "500", "--poll-interval-ms", "100"];
/**
 * Two workers per role, each serving its role's queue and the ordinary jobs'
 * ("default"). One job at a time on the spinning and exiting roles: a blocked
 * event loop or an exit takes down only the job that caused it (and ordinary
 * jobs, which are judged by the general criteria only).
 */
const ROLES: ReadonlyArray<readonly string[]> = [
  ["--queues", "steady,default", "--concurrency", "4"],
  ["--queues", "steady,default", "--concurrency", "4"],
  ["--queues", "spin,default", "--concurrency", "1"],
  ["--queues", "spin,default", "--concurrency", "1"],
  ["--queues", "lethal,default", "--concurrency", "1"],
  ["--queues", "lethal,default", "--concurrency", "1"],
];
const THROWN: ReadonlyArray<{ value: NonNullable<ChaosPayload["throwValue"]>; message: string }> = [
  { value: "string", message: "a plain string" },
  { value: "number", message: "handler threw a non-Error value: 42" },
  { value: "object", message: 'handler threw a non-Error value: {"code":"E_OBJECT","detail":"a plain object"}' },
  { value: "null", message: "handler threw a non-Error value: null" },
  { value: "undefined", message: "handler threw a non-Error value: undefined" },
  { value: "array", message: 'handler threw a non-Error value: [1,"two"]' },
];

const file = chaosFile();

describe("chaos: handlers that misbehave", () => {
  it("contains non-Error throws, handlers that never settle, block the event loop past the lease, or exit the process", async () => {
    const r = await file.start("bad-handlers");
    const deadlocksBefore = await deadlocks(file.database.url);
    const pool: CliProcess[] = ROLES.map((role) => r.spawn([...TIMING, ...role]));
    await Promise.all(pool.map((w) => w.ready()));

    // The supervisor: a worker that died is replaced (its exit is kept for the checks).
    const exits: Array<{ pid: number; code: number | null; signal: string | null }> = [];
    let supervising = true;
    const supervisor = (async () => {
      while (supervising) {
        for (let i = 0; i < pool.length; i += 1) {
          const w = pool[i]!;
          if (w.alive) continue;
          exits.push({ pid: w.pid, ...w.exit! });
          pool[i] = r.spawn([...TIMING, ...ROLES[i]!]);
        }
        await sleep(100);
      }
    })();

    const ordinary: Enqueue[] = Array.from({ length: ORDINARY }, () => ({ job: "chaos.work", payload: { sleepMs: between(10, 50) } }));
    const throwers: Enqueue[] = THROWN.map(({ value }) => ({ job: "chaos.fragile", payload: { throwValue: value }, queue: "steady" }));
    const hangers: Enqueue[] = [1, 2, 3].map(() => ({ job: "chaos.timed", payload: { neverSettle: true }, queue: "steady" }));
    const spinners: Enqueue[] = [1, 2].map(() => ({ job: "chaos.work", payload: { firstRunBusyMs: BUSY_MS }, queue: "spin" }));
    const exitOnce: Enqueue[] = [1, 2].map(() => ({ job: "chaos.work", payload: { firstRunExit: 7 }, queue: "lethal" }));
    const exitAlways: Enqueue[] = [{ job: "chaos.fragile", payload: { alwaysExit: 9 }, queue: "lethal" }];
    // The bad ones first, so they meet workers busy with ordinary jobs.
    const [throwIds, hangIds, spinIds, exitOnceIds, exitAlwaysIds] = [
      await r.enqueue(throwers),
      await r.enqueue(hangers),
      await r.enqueue(spinners),
      await r.enqueue(exitOnce),
      await r.enqueue(exitAlways),
    ];
    await r.enqueue(ordinary);
    const enqueuedAt = Date.now();
    r.startLeaseMonitor();

    let drainSeconds: number;
    try {
      drainSeconds = await r.drained(DRAIN_BOUND_MS, enqueuedAt);
    } finally {
      supervising = false;
      await supervisor;
    }
    const maxOverdueMs = await r.stopLeaseMonitor();
    await r.stopWorkers();

    const history = async (id: string) =>
      r.q<{ outcome: string; worker_id: string; error: { name?: string; message?: string } | null }>(
        `SELECT outcome, worker_id, error FROM ${r.s}.job_attempts WHERE job_id = $1 ORDER BY started_at`,
        [id],
      );
    const job = async (id: string) =>
      (await r.q<{ status: string; attempts: number; last_error: { name?: string; message?: string } | null }>(
        `SELECT status, attempts, last_error FROM ${r.s}.jobs WHERE id = $1`,
        [id],
      ))[0]!;

    // Soft: one misbehaviour recorded wrongly must not hide how the others were handled.
    for (const [i, id] of throwIds!.entries()) {
      expect.soft(await job(id)).toMatchObject({ status: "dead", attempts: 3, last_error: { name: "NonError", message: THROWN[i]!.message } });
      expect.soft((await history(id)).map((e) => e.outcome)).toEqual(["failed", "failed", "failed"]);
    }
    for (const id of hangIds!) {
      expect.soft(await job(id)).toMatchObject({ status: "dead", attempts: 2, last_error: { name: "JobTimeoutError" } });
      expect.soft((await history(id)).map((e) => e.outcome)).toEqual(["timeout", "timeout"]);
    }
    for (const id of [...spinIds!, ...exitOnceIds!]) {
      expect.soft(await job(id)).toMatchObject({ status: "succeeded", attempts: 2 });
      expect.soft((await history(id)).map((e) => e.outcome)).toEqual(["lease_expired", "succeeded"]);
    }
    for (const id of exitAlwaysIds!) {
      expect.soft(await job(id)).toMatchObject({ status: "dead", attempts: 3 });
      expect.soft((await history(id)).map((e) => e.outcome)).toEqual(["lease_expired", "lease_expired", "lease_expired"]);
    }
    // process.exit(7) twice (first runs), process.exit(9) three times (every run); nothing else died.
    expect(exits.map((e) => e.code).sort()).toEqual([7, 7, 9, 9, 9]);
    // The spinning workers wrote nothing that counts on waking: each said which fence stopped it.
    for (const id of spinIds!) {
      const [first] = await history(id);
      const spinner = r.workers.find((w) => first!.worker_id.endsWith(`-${w.pid}-${first!.worker_id.split("-").pop()}`))!;
      const fenced = spinner
        .logs()
        .some(
          (line) =>
            line.jobId === id &&
            (line.msg === "lease lost while running; this attempt writes nothing" || line.msg === "outcome not recorded: the job is no longer ours (fenced)"),
        );
      expect(fenced, spinner.output()).toBe(true);
    }

    const verdict = await r.judge({ allowDuplicates: ["after_lease_expiry", "late_stale_owner"] });
    summary(
      "bad-handlers",
      verdict,
      `${THROWN.length} non-Error throwers, ${hangIds!.length} never-settling, ${spinIds!.length} blocking the loop ${BUSY_MS / 1000} s, ` +
        `${exitOnceIds!.length} exiting once, ${exitAlwaysIds!.length} exiting always; ${exits.length} worker deaths, all restarted`,
      drainSeconds,
      `longest overdue lease ${(maxOverdueMs / 1000).toFixed(1)} s`,
    );
    expect(verdict.violations).toEqual([]);
    expect(r.logProblems()).toEqual([]);
    expect(verdict.statuses).toEqual({ succeeded: ORDINARY + spinners.length + exitOnce.length, dead: throwers.length + hangers.length + exitAlways.length });
    expect(maxOverdueMs).toBeLessThan(10_000);
    expect(await deadlocks(file.database.url), "deadlocks PostgreSQL counted in this scenario's database").toBe(deadlocksBefore);
  }, 180_000);
});
