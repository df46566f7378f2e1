/**
 * `conveyor worker` with bad arguments exits non-zero with one clear line on
 * stderr: no stack trace, no usage dump.
 */
import { afterAll, describe, expect, it } from "vitest";
import { connectTestClient, testDatabaseUrl, uniqueSchemaName } from "../helpers/database.js";
import { killAllWorkers, LEDGER_JOBS, ledgerSchema, spawnCli, spawnWorker } from "./process-helpers.js";

afterAll(killAllWorkers);

const cases: Array<{ name: string; args: string[]; mentions: RegExp }> = [
  { name: "--concurrency 0", args: ["worker", "--jobs", LEDGER_JOBS, "--concurrency", "0"], mentions: /concurrency/ },
  { name: "--claim-batch-size 0", args: ["worker", "--jobs", LEDGER_JOBS, "--claim-batch-size", "0"], mentions: /--claim-batch-size/ },
  { name: "--claim-batch-size 1001", args: ["worker", "--jobs", LEDGER_JOBS, "--claim-batch-size", "1001"], mentions: /claimBatchSize must be at most 1000/ },
  { name: "--progress-interval-ms soon", args: ["worker", "--jobs", LEDGER_JOBS, "--progress-interval-ms", "soon"], mentions: /--progress-interval-ms/ },
  { name: "no --jobs", args: ["worker", "--concurrency", "2"], mentions: /--jobs/ },
  { name: "a jobs module that does not exist", args: ["worker", "--jobs", "test/fixtures/does-not-exist.js"], mentions: /^conveyor: --jobs: no module at test\/fixtures\/does-not-exist\.js$/ },
  {
    name: "a jobs module whose own import is missing",
    args: ["worker", "--jobs", "test/fixtures/imports-missing-module.js"],
    mentions:
      /^conveyor: --jobs: could not load test\/fixtures\/imports-missing-module\.js: module \.\/test\/fixtures\/lib\/missing-helper\.js not found, imported from \.\/test\/fixtures\/imports-missing-module\.js$/,
  },
  {
    name: "a jobs module importing a package that is not installed",
    args: ["worker", "--jobs", "test/fixtures/imports-missing-package.js"],
    mentions:
      /^conveyor: --jobs: could not load test\/fixtures\/imports-missing-package\.js: package conveyor-test-package-not-installed not found, imported from \.\/test\/fixtures\/imports-missing-package\.js$/,
  },
  { name: "a module whose default export is not an array of definitions", args: ["worker", "--jobs", "test/fixtures/not-an-array.js"], mentions: /not-an-array\.js/ },
  { name: "a module that throws while loading", args: ["worker", "--jobs", "test/fixtures/throws-on-import.js"], mentions: /broken on purpose/ },
];

describe("conveyor worker argument errors", () => {
  it.each(cases)("$name: exits non-zero with one line on stderr, and writes nothing", async ({ args, mentions }) => {
    const schema = uniqueSchemaName();
    const cli = spawnCli([...args, "--schema", schema], testDatabaseUrl());
    const exit = await cli.waitForExit(20_000);
    expect(exit.signal).toBeNull();
    expect(exit.code).not.toBe(0);
    const lines = cli.stderr.split("\n").filter((line) => line.trim() !== "");
    expect(lines, cli.stderr).toHaveLength(1);
    expect(lines[0]).toMatch(mentions);
    expect(cli.stderr).not.toMatch(/^\s+at /m);
    // Nothing was started: no worker log lines, and no schema migrated.
    expect(cli.logs().filter((entry) => entry.msg === "worker started")).toEqual([]);
    const client = await connectTestClient();
    try {
      const { rows } = await client.query("SELECT 1 FROM pg_namespace WHERE nspname = $1", [schema]);
      expect(rows, `schema ${schema}`).toEqual([]);
    } finally {
      await client.end();
    }
  }, 30_000);
});

describe("conveyor worker tuning flags", () => {
  it("passes --concurrency, --claim-batch-size and --progress-interval-ms to the worker it starts", async () => {
    const ledger = await ledgerSchema();
    try {
      const worker = spawnWorker({
        databaseUrl: testDatabaseUrl(),
        schema: ledger.schema,
        args: ["--concurrency", "40", "--claim-batch-size", "10", "--progress-interval-ms", "250"],
      });
      const started = await worker.ready();
      expect(started).toMatchObject({ concurrency: 40, claimBatchSize: 10, progressIntervalMs: 250 });
      worker.signal("SIGTERM");
      expect((await worker.waitForExit(20_000)).code).toBe(0);
    } finally {
      await ledger.cleanup();
    }
  }, 60_000);
});
