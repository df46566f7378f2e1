/**
 * 20,000 jobs across four worker processes: every job runs exactly once
 * (one ledger entry, one succeeded execution, one attempt), and the work is
 * shared between processes.
 */
import { afterEach, describe, expect, it } from "vitest";
import { type CliProcess, killAllWorkers, type LedgerSchema, ledgerSchema, spawnWorker } from "./process-helpers.js";
import { StopWaiting, waitFor } from "../helpers/wait-for.js";

const JOBS = 20_000;
const WORKERS = 4;

let current: LedgerSchema | null = null;

afterEach(async () => {
  await killAllWorkers();
  await current?.cleanup();
  current = null;
});

describe("many jobs across worker processes", () => {
  it(`runs ${JOBS} jobs on ${WORKERS} processes exactly once each`, async () => {
    const t = (current = await ledgerSchema());
    // Leases are not under test here: a long one keeps a loaded CI machine from reclaiming live jobs.
    const args = ["--concurrency", "25", "--lease-ms", "30000", "--heartbeat-ms", "2000", "--poll-interval-ms", "100"];
    const workers: CliProcess[] = Array.from({ length: WORKERS }, () => spawnWorker({ databaseUrl: t.databaseUrl, schema: t.schema, args }));
    await Promise.all(workers.map((w) => w.ready()));

    const enqueued = await t.conveyor.enqueueMany(Array.from({ length: JOBS }, (_, i) => ({ job: "test.ledger", payload: { sleepMs: i % 3 } })));
    expect(enqueued).toHaveLength(JOBS);
    await waitFor(
      `all ${JOBS} jobs to succeed`,
      async () => {
        for (const w of workers) if (!w.alive) throw new StopWaiting(`worker ${w.pid} exited: ${JSON.stringify(w.exit)}\n${w.output()}`);
        return (await t.db.countStatus("succeeded")) === JOBS;
      },
      150_000,
      500,
    );

    const s = `"${t.schema}"`;
    const [summary] = await t.db.query<{
      jobs: number;
      succeeded: number;
      not_one_attempt: number;
      executions: number;
      not_one_success: number;
      ledger_rows: number;
      ledger_matched: number;
    }>(`
      SELECT
        (SELECT count(*)::int FROM ${s}.jobs) AS jobs,
        (SELECT count(*)::int FROM ${s}.jobs WHERE status = 'succeeded') AS succeeded,
        (SELECT count(*)::int FROM ${s}.jobs WHERE attempts <> 1) AS not_one_attempt,
        (SELECT count(*)::int FROM ${s}.job_attempts) AS executions,
        (SELECT count(*)::int FROM ${s}.jobs AS j
          WHERE (SELECT count(*) FROM ${s}.job_attempts AS e WHERE e.job_id = j.id AND e.outcome = 'succeeded') <> 1) AS not_one_success,
        (SELECT count(*)::int FROM ${s}.ledger) AS ledger_rows,
        (SELECT count(DISTINCT j.id)::int FROM ${s}.jobs AS j
           JOIN ${s}.job_attempts AS e ON e.job_id = j.id AND e.outcome = 'succeeded' AND e.attempt = 1
           JOIN ${s}.ledger AS l ON l.execution_id = e.id AND l.job_id = j.id AND l.event = 'done' AND l.worker_id = e.worker_id) AS ledger_matched`);
    expect(summary).toEqual({
      jobs: JOBS,
      succeeded: JOBS,
      not_one_attempt: 0,
      // One attempt per job, no lease lost, no retry…
      executions: JOBS,
      not_one_success: 0,
      // …and the handler's side effect happened exactly once per job, in the execution that succeeded.
      ledger_rows: JOBS,
      ledger_matched: JOBS,
    });

    const perPid = await t.db.query<{ pid: number; n: number }>(`SELECT pid, count(*)::int AS n FROM ${s}.ledger GROUP BY pid ORDER BY pid`);
    const pids = new Set(workers.map((w) => w.pid));
    for (const { pid } of perPid) expect(pids.has(pid)).toBe(true);
    expect(perPid.length, JSON.stringify(perPid)).toBeGreaterThan(1);

    for (const w of workers) w.signal("SIGTERM");
    for (const w of workers) expect(await w.waitForExit(20_000)).toEqual({ code: 0, signal: null });
  }, 210_000);
});
