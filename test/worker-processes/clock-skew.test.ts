/**
 * Hosts whose clocks are an hour behind. Job and execution ids are UUIDv7
 * (time first), and listings, pages and the dashboard's throughput chart go
 * by id. Ids are made from the database server's clock, not the host's, so a
 * skewed host's jobs list where they belong and its worker's attempts count
 * in the chart. The skew is real for the process: a preload moves its
 * Date.now() and new Date() (test/fixtures/skew-clock.mjs).
 */
import { resolve } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { JsonLinesProcess, REPO_ROOT } from "../helpers/child-process.js";
import { killAllWorkers, type LedgerSchema, ledgerSchema, spawnWorker } from "./process-helpers.js";
import { waitFor } from "../helpers/wait-for.js";

const HOUR_BEHIND = { CLOCK_SKEW_MS: String(-60 * 60 * 1000), NODE_OPTIONS: `--import=${resolve(REPO_ROOT, "test/fixtures/skew-clock.mjs")}` };

let current: LedgerSchema | null = null;

afterEach(async () => {
  await killAllWorkers();
  await current?.cleanup();
  current = null;
});

describe("a host whose clock is an hour behind", () => {
  it("enqueues jobs that list as the newest, not an hour back", async () => {
    const t = (current = await ledgerSchema());
    const [earlier] = await t.conveyor.enqueueMany([{ job: "test.ledger", payload: {} }]);
    const child = new JsonLinesProcess(resolve(REPO_ROOT, "test/fixtures/enqueue-one.mjs"), [t.databaseUrl, t.schema], { ...process.env, ...HOUR_BEHIND });
    try {
      const { id, localNow } = await child.next<{ id: string; localNow: number }>(30_000);
      expect(Date.now() - localNow).toBeGreaterThan(59 * 60 * 1000); // the child's clock really was behind
      const page = await t.conveyor.listJobs({ limit: 10 });
      expect(page.items.map((job) => job.id)).toEqual([id, earlier!.id]);
    } finally {
      child.child.kill("SIGKILL");
    }
  });

  it("runs attempts that the throughput chart counts", async () => {
    const t = (current = await ledgerSchema());
    const worker = spawnWorker({ databaseUrl: t.databaseUrl, schema: t.schema, args: ["--poll-interval-ms", "100"], env: HOUR_BEHIND });
    await worker.ready();
    await t.conveyor.enqueueMany(Array.from({ length: 20 }, () => ({ job: "test.ledger", payload: {} })));
    await waitFor("the skewed worker to finish the jobs", async () => {
      const { rows } = await t.conveyor.pool.query(`SELECT count(*)::int AS n FROM "${t.schema}".jobs WHERE status = 'succeeded'`);
      return rows[0].n === 20;
    }, 20_000);
    expect(await t.db.ledger({ pid: worker.pid, event: "done" })).toHaveLength(20);
    const minutes = await t.conveyor.throughput.lastHour();
    expect(minutes.reduce((sum, minute) => sum + minute.succeeded, 0)).toBe(20);
    expect(minutes.reduce((sum, minute) => sum + minute.enqueued, 0)).toBe(20);
  });
});
