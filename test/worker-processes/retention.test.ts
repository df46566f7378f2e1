/**
 * `conveyor worker` prunes on its own: with --retain-finished/--retain-dead
 * it deletes what is older than those ages soon after it starts; with
 * --no-retention it starts with no prune loop (its "worker started" line says
 * `retention: false`) and deletes nothing; a bad duration is one line and exit 1.
 */
import { afterAll, afterEach, beforeEach, describe, expect, it } from "vitest";
import { DAY_MS, makeJobs, surviving } from "../retention-support.js";
import { killAllWorkers, type LedgerSchema, ledgerSchema, spawnCli, spawnWorker } from "./process-helpers.js";

let ledger: LedgerSchema;
beforeEach(async () => {
  ledger = await ledgerSchema();
});
afterEach(async () => {
  await killAllWorkers();
  await ledger?.cleanup();
});
afterAll(killAllWorkers);

const make = (count: number, state: Parameters<typeof makeJobs>[3], ageMs: number) => makeJobs(ledger.conveyor, "test.ledger", count, state, ageMs);

describe("conveyor worker retention", () => {
  it("prunes past --retain-finished and --retain-dead soon after it starts, and keeps the rest", async () => {
    const finished = await make(3, "succeeded", 2 * DAY_MS);
    const dead = await make(2, "dead", 3 * DAY_MS);
    const young = await make(2, "cancelled", 60 * 60 * 1000);
    const worker = spawnWorker({ databaseUrl: ledger.databaseUrl, schema: ledger.schema, args: ["--retain-finished", "1d", "--retain-dead", "48h"] });
    expect((await worker.ready()).retention).toMatchObject({ finishedMs: DAY_MS, deadLetterMs: 2 * DAY_MS });
    const logged = await worker.waitForLog("pruned old finished jobs, dead letters and events", 30_000);
    expect(logged).toMatchObject({ jobs: 3, deadLetters: 2 });
    expect(await surviving(ledger.conveyor, "jobs", [...finished, ...dead])).toEqual([]);
    expect(await surviving(ledger.conveyor, "jobs", young)).toEqual([...young].sort());
    worker.signal("SIGTERM");
    expect((await worker.waitForExit(30_000)).code).toBe(0);
  }, 60_000);

  it("prunes nothing with --no-retention", async () => {
    const old = await make(3, "succeeded", 400 * DAY_MS);
    const worker = spawnWorker({ databaseUrl: ledger.databaseUrl, schema: ledger.schema, args: ["--no-retention"] });
    // Started without a prune loop (test/retention.test.ts shows a worker with retention: false has none).
    expect((await worker.ready()).retention).toBe(false);
    worker.signal("SIGTERM");
    expect((await worker.waitForExit(30_000)).code).toBe(0);
    expect(await surviving(ledger.conveyor, "jobs", old)).toEqual([...old].sort());
    expect(worker.logs().filter((entry) => entry.msg === "pruned old finished jobs, dead letters and events")).toEqual([]);
  }, 60_000);

  it("refuses a bad duration with one line and a non-zero exit", async () => {
    const cli = spawnCli(["worker", "--jobs", "test/fixtures/ledger-jobs.js", "--schema", ledger.schema, "--retain-finished", "2 weeks"], ledger.databaseUrl);
    const exit = await cli.waitForExit(20_000);
    expect(exit.code).not.toBe(0);
    const lines = cli.stderr.split("\n").filter((line) => line.trim() !== "");
    expect(lines, cli.stderr).toHaveLength(1);
    expect(lines[0]).toMatch(/--retain-finished/);
    expect(cli.logs().filter((entry) => entry.msg === "worker started")).toEqual([]);
  }, 30_000);
});
