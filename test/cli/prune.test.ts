/**
 * `conveyor prune` as a real process (the built CLI) against the test
 * database, in a schema of this file's own: what it deletes, its human and
 * --json output, and one line plus a non-zero exit for bad durations.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defineJob } from "../../packages/core/src/index.js";
import { createTestConveyor, type TestConveyor } from "../helpers/database.js";
import { DAY_MS, makeJobs, surviving } from "../retention-support.js";
import { emptyPayload } from "../worker/support.js";
import { runCli, silent, stderrLines } from "./support.js";

const noop = defineJob({ kind: "noop", schema: emptyPayload, maxAttempts: 2, handler: () => {} });

let test: TestConveyor;
const cli = (...args: string[]) => runCli(["prune", ...args, "--schema", test.schema]);

beforeAll(async () => {
  test = await createTestConveyor({ jobs: [noop], logger: silent });
});
afterAll(() => test?.cleanup());

describe("conveyor prune", () => {
  it("deletes with the default ages and says what it deleted", async () => {
    const old = await makeJobs(test.conveyor, "noop", 3, "succeeded", 8 * DAY_MS);
    const young = await makeJobs(test.conveyor, "noop", 2, "succeeded", 2 * 60 * 60 * 1000);
    const oldDead = await makeJobs(test.conveyor, "noop", 1, "dead", 31 * DAY_MS);

    const result = await cli();
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toBe("pruned 3 finished jobs (older than 7d), 1 dead letters (older than 30d), 0 emptied flows and 0 events (older than 7d)\n");
    expect(await surviving(test.conveyor, "jobs", [...old, ...oldDead])).toEqual([]);
    expect(await surviving(test.conveyor, "jobs", young)).toEqual([...young].sort());
  });

  it("takes the ages as durations and prints JSON with --json", async () => {
    const finished = await makeJobs(test.conveyor, "noop", 2, "cancelled", 2 * DAY_MS);
    const dead = await makeJobs(test.conveyor, "noop", 2, "dead", 2 * DAY_MS);
    const kept = await makeJobs(test.conveyor, "noop", 1, "succeeded", 60 * 1000);

    const result = await cli("--finished-older-than", "12h", "--dead-older-than", "86400000", "--batch-size", "1", "--json");
    expect(result.code, result.stderr).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual({ jobs: 2, deadLetters: 2, flows: 0, events: 0 });
    expect(await surviving(test.conveyor, "jobs", [...finished, ...dead])).toEqual([]);
    expect(await surviving(test.conveyor, "jobs", kept)).toEqual(kept);
  });

  it("refuses a bad duration or batch size with one line and a non-zero exit, deleting nothing", async () => {
    const kept = await makeJobs(test.conveyor, "noop", 1, "succeeded", 100 * DAY_MS);
    for (const args of [["--finished-older-than", "7 days"], ["--dead-older-than", "-1d"], ["--finished-older-than", "3w"], ["--batch-size", "0"]]) {
      const result = await cli(...args);
      expect(result.code, args.join(" ")).not.toBe(0);
      const lines = stderrLines(result);
      expect(lines, args.join(" ")).toHaveLength(1);
      expect(lines[0]).toContain(args[0]);
    }
    const tooBig = await cli("--batch-size", "20000");
    expect(tooBig.code).toBe(1);
    expect(stderrLines(tooBig)).toEqual(["conveyor: batchSize must be an integer from 1 to 10000, got 20000"]);
    expect(await surviving(test.conveyor, "jobs", kept)).toEqual(kept);
  });
});
