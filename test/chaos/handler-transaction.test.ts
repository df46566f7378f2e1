/**
 * Scenario: the connection under a handler's `ctx.transaction` dies while
 * the transaction is open, three ways:
 *   (a) pg_terminate_backend on the backends running handler transactions
 *       (found in pg_stat_activity: application_name `conveyor`, `idle in
 *       transaction`, last statement the ledger write), round after round;
 *   (b) PostgreSQL restarted, fast then immediate, while handler
 *       transactions are open (a server of the test's own);
 *   (c) idle_in_transaction_session_timeout = 1s on the scenario's database
 *       (ALTER DATABASE, before the workers connect) while handlers sit 3 s
 *       idle in their transactions: on the first run of most jobs, and on
 *       every run of a few poison jobs.
 * Asserts: every worker process stays alive (no "Unhandled 'error' event"
 * on stderr), the attempts the fault hit fail with an error and are retried,
 * every job ends terminal (the poison jobs dead after their attempts, every
 * other job succeeded), and the judge passes with no repeated side effect
 * at all: the fixture writes its effect inside the transaction (payload
 * `inTransaction`), so it commits with the completion or not at all.
 *
 * Why (issue 29): pg emits 'error' on a client checked out of the pool
 * when its connection ends, and the pool listens only on idle clients. A
 * transaction's client, checked out for the handler's callback, had no
 * listener: the server dropping that one session ended the whole worker
 * process with an unhandled 'error' event, and a job whose transaction
 * always outlived a server timeout killed every worker that took it.
 * Checked-out clients now keep a listener and are discarded on release.
 */
import { describe, expect, it } from "vitest";
import type { CliProcess } from "../worker-processes/process-helpers.js";
import type { StopMode } from "./dedicated-postgres.js";
import { between, type ChaosRun, chaosFile, onDedicatedServer, sleep, summary } from "./harness.js";
import { StopWaiting, waitFor } from "../helpers/wait-for.js";

const WORKERS = 3;
const ARGS = ["--concurrency", "4", "--lease-ms", "10000", "--heartbeat-ms", "1000", "--reclaim-interval-ms", "500", "--poll-interval-ms", "100"];
const DRAIN_BOUND_MS = 60_000;
const UNHANDLED = /Unhandled 'error' event/;

const file = chaosFile();

/** Backends of this database in a handler's transaction, idle after its ledger write. */
const IDLE_HANDLER_TRANSACTIONS = `
  SELECT pid FROM pg_stat_activity
   WHERE datname = current_database() AND application_name = 'conveyor'
     AND state = 'idle in transaction' AND query ILIKE '%chaos_ledger%'`;

function expectAlive(workers: readonly CliProcess[]): void {
  for (const w of workers) {
    expect(w.stderr, `worker ${w.pid} stderr`).not.toMatch(UNHANDLED);
    expect(w.alive, `worker ${w.pid} exited: ${JSON.stringify(w.exit)}\n${w.output()}`).toBe(true);
  }
}

/** Executions that failed, with their error message; every job they belong to must have run again. */
async function failedAttempts(r: ChaosRun): Promise<Array<{ job_id: string; message: string | null; status: string; later: number }>> {
  return r.q(
    `SELECT e.job_id, e.error->>'message' AS message, j.status,
            (SELECT count(*)::int FROM ${r.s}.job_attempts AS n WHERE n.job_id = e.job_id AND n.started_at > e.started_at) AS later
       FROM ${r.s}.job_attempts AS e JOIN ${r.s}.jobs AS j ON j.id = e.job_id
      WHERE e.outcome = 'failed'`,
  );
}

/** The end of every scenario: all alive, drained, each failed attempt retried, the judge strict. */
async function finish(r: ChaosRun, workers: CliProcess[], name: string, faults: string, expected: { dead?: number } = {}): Promise<void> {
  const drainedFrom = Date.now();
  const drainSeconds = await r.drained(DRAIN_BOUND_MS, drainedFrom, () => workers);
  expectAlive(workers);
  await r.stopWorkers();
  for (const w of workers) expect(w.exit, w.output()).toEqual({ code: 0, signal: null });

  const failed = await failedAttempts(r);
  const verdict = await r.judge({ allowDuplicates: [] });
  summary(name, verdict, faults, drainSeconds, `${failed.length} attempts failed and were retried, e.g. "${failed[0]?.message ?? ""}"`);
  expect(verdict.violations).toEqual([]);
  expect(verdict.duplicates, "effects are written in the transaction: none without its completion").toBe(0);
  expect(r.logProblems()).toEqual([]);
  expect(failed.length, "attempts hit by the fault").toBeGreaterThan(0);
  for (const attempt of failed) {
    expect(attempt.message, "a failed attempt records its error").toBeTruthy();
    // Retried: a later attempt, unless it was a poison job's last.
    if (attempt.status !== "dead") expect(attempt.later, `job ${attempt.job_id} ran again after its failed attempt`).toBeGreaterThan(0);
  }
  const dead = expected.dead ?? 0;
  expect(verdict.statuses).toEqual(dead > 0 ? { succeeded: verdict.jobs - dead, dead } : { succeeded: verdict.jobs });
}

describe("chaos: the connection under a handler's ctx.transaction dies", () => {
  it("(a) survives pg_terminate_backend on the handler transactions' backends", async () => {
    const r = await file.start("handler-transaction-terminate");
    const workers = Array.from({ length: WORKERS }, () => r.spawn(ARGS));
    await Promise.all(workers.map((w) => w.ready()));
    const JOBS = 300;
    await r.enqueue(
      Array.from({ length: JOBS }, () => ({
        job: "chaos.work" as const,
        payload: { sleepMs: between(0, 20), inTransaction: true, txIdleMs: between(150, 400) },
      })),
    );

    // Round after round, terminate every handler transaction caught idle, until enough were hit.
    let terminated = 0;
    let rounds = 0;
    const until = Date.now() + 20_000;
    while (terminated < 15 && Date.now() < until) {
      const rows = await r.q<{ pid: number; done: boolean }>(
        `SELECT pid, pg_terminate_backend(pid) AS done FROM (${IDLE_HANDLER_TRANSACTIONS}) AS t`,
      );
      terminated += rows.filter((row) => row.done).length;
      rounds += 1;
      await sleep(rows.length > 0 ? 300 : 20);
      if (workers.some((w) => !w.alive)) break;
    }
    try {
      expectAlive(workers);
      expect(terminated).toBeGreaterThan(0);
      await finish(r, workers, "handler-transaction (terminate)", `${terminated} handler transactions' backends terminated in ${rounds} rounds`);
    } finally {
      await r.cleanup();
    }
  }, 120_000);

  it("(b) survives PostgreSQL restarts (fast, immediate) with handler transactions open", async () => {
    await onDedicatedServer("handler-transaction-restart", async (run, server) => {
    const workers = Array.from({ length: WORKERS }, () => run.spawn(ARGS));
    await Promise.all(workers.map((w) => w.ready()));
    let enqueued = 0;
    const work = async (n: number) => {
      await run.enqueue(
        Array.from({ length: n }, () => ({
          job: "chaos.work" as const,
          payload: { sleepMs: between(0, 20), inTransaction: true, txIdleMs: between(100, 300) },
        })),
      );
      enqueued += n;
    };
    await work(300);
    const outages: string[] = [];
    const modes: StopMode[] = ["fast", "immediate"];
    for (const mode of modes) {
      // Work in hand for every restart, however fast the machine drains.
      const [ready] = await run.q<{ n: number }>(`SELECT count(*)::int AS n FROM ${run.s}.jobs WHERE status IN ('queued', 'retrying')`);
      if (ready!.n < 100) await work(200);
      // Restart while handler transactions are open.
      const open = await waitFor(
        "handler transactions open",
        async () => {
          for (const w of workers) if (!w.alive) throw new StopWaiting(`worker ${w.pid} exited: ${JSON.stringify(w.exit)}\n${w.output()}`);
          const rows = await run.q<{ pid: number }>(IDLE_HANDLER_TRANSACTIONS);
          return rows.length >= 2 ? rows.length : null;
        },
        30_000,
        20,
      );
      const downAt = Date.now();
      await server.restartAfter(mode, 1_000);
      outages.push(`${mode} with ${open} handler transactions open, ${((Date.now() - downAt) / 1000).toFixed(1)} s`);
      // Long enough for every worker to notice and reconnect.
      await sleep(2_000);
      expectAlive(workers);
    }
    expect((await run.statusCounts()).succeeded ?? 0).toBeLessThan(enqueued); // work was left after the last restart
    await finish(run, workers, "handler-transaction (restart)", `2 restarts (${outages.join("; ")})`);
    });
  }, 180_000);

  it("(c) survives idle_in_transaction_session_timeout ending handler transactions, poison jobs included", async () => {
    const r = await file.start("handler-transaction-idle-timeout");
    const db = file.database.name;
    // Sessions started from now on get it: the workers', not the test's pool already open.
    await r.q(`ALTER DATABASE ${db} SET idle_in_transaction_session_timeout = '1s'`);
    try {
      const workers = Array.from({ length: WORKERS }, () => r.spawn(ARGS));
      await Promise.all(workers.map((w) => w.ready()));
      const [setting] = await r.q<{ value: string }>(
        `SELECT s.setconfig::text AS value FROM pg_db_role_setting AS s JOIN pg_database AS d ON d.oid = s.setdatabase WHERE d.datname = $1`,
        [db],
      );
      expect(setting?.value).toContain("idle_in_transaction_session_timeout=1s");
      const ONCE = 24;
      const POISON = 3;
      await r.enqueue([
        // Idle 3 s in the first run's transaction (ended by the server after 1 s), then quick.
        ...Array.from({ length: ONCE }, () => ({
          job: "chaos.work" as const,
          payload: { sleepMs: between(0, 20), inTransaction: true, firstRunTxIdleMs: 3_000, txIdleMs: 0 },
        })),
        // Idle 3 s on every run: three attempts (chaos.fragile), each ended by the server, then dead.
        ...Array.from({ length: POISON }, () => ({ job: "chaos.fragile" as const, payload: { inTransaction: true, txIdleMs: 3_000 } })),
      ]);
      await finish(r, workers, "handler-transaction (idle timeout)", `idle_in_transaction_session_timeout 1 s, ${ONCE} first-run and ${POISON} poison jobs idle 3 s`, {
        dead: POISON,
      });
      const [poisoned] = await r.q<{ n: number }>(
        `SELECT count(*)::int AS n FROM ${r.s}.job_attempts AS e JOIN ${r.s}.jobs AS j ON j.id = e.job_id
          WHERE j.kind = 'chaos.fragile' AND e.outcome = 'failed'`,
      );
      expect(poisoned!.n, "every attempt of a poison job failed").toBe(POISON * 3);
    } finally {
      await r.q(`ALTER DATABASE ${db} RESET idle_in_transaction_session_timeout`).catch(() => {});
      await r.cleanup();
    }
  }, 120_000);
});
