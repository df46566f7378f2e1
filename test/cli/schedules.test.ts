/**
 * `conveyor schedules` as a real process (the built CLI) against the test
 * database: the empty state, the table, --json (the HTTP API's shape),
 * --tenant, bad arguments and --help.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { defineJob } from "../../packages/core/src/index.js";
import { scheduleJson } from "../../packages/core/src/wire/schedule-json.js";
import { createTestConveyor, type TestConveyor } from "../helpers/database.js";
import { runCli, silent, stderrLines } from "./support.js";

const cleanup = defineJob({
  kind: "cleanup.tmp",
  schema: z.object({ olderThanDays: z.number().int() }),
  cron: [
    { name: "cleanup.nightly", cron: "0 3 * * *", timezone: "Asia/Tokyo", payload: { olderThanDays: 7 }, missed: { policy: "catch-up", limit: 2 } },
    { name: "cleanup.acme", cron: "15 30 4 1 * *", tenant: "acme", payload: { olderThanDays: 1 } },
  ],
  handler: async () => {},
});

let test: TestConveyor;
const cli = (...args: string[]) => runCli([...args, "--schema", test.schema]);

beforeAll(async () => {
  test = await createTestConveyor({ jobs: [cleanup], logger: silent });
});
afterAll(() => test?.cleanup());

describe("conveyor schedules", () => {
  it("says so when no worker has stored a schedule yet", async () => {
    const result = await cli("schedules");
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout.trim()).toBe("no cron schedules yet (a schedule appears when a worker running its kind starts)");
    expect(JSON.parse((await cli("schedules", "--json")).stdout)).toEqual({ items: [] });
  });

  it("prints the stored schedules as a table and as the API's JSON, and filters by tenant", async () => {
    const worker = test.conveyor.worker();
    await worker.start();
    await worker.stop();

    const table = await cli("schedules");
    expect(table.code, table.stderr).toBe(0);
    const lines = table.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^NAME\s+KIND\s+CRON\s+TIMEZONE\s+TENANT\s+QUEUE\s+MISSED\s+NEXT TICK\s+LAST TICK$/);
    expect(lines).toHaveLength(3);
    expect(lines[1]).toMatch(/^cleanup\.acme\s+cleanup\.tmp\s+15 30 4 1 \* \*\s+UTC\s+acme\s+default\s+skip\s+\d{4}-\d{2}-01T04:30:15\.000Z\s+-$/);
    // 03:00 in Tokyo (+9, no DST) is 18:00 UTC.
    expect(lines[2]).toMatch(/^cleanup\.nightly\s+cleanup\.tmp\s+0 3 \* \* \*\s+Asia\/Tokyo\s+default\s+default\s+catch-up 2\s+\d{4}-\d{2}-\d{2}T18:00:00\.000Z\s+-$/);

    const json = await cli("schedules", "--json");
    expect(json.code, json.stderr).toBe(0);
    const stored = await test.conveyor.listSchedules();
    expect(JSON.parse(json.stdout)).toEqual({ items: stored.map(scheduleJson) });

    const acme = JSON.parse((await cli("schedules", "--tenant", "acme", "--json")).stdout);
    expect(acme.items.map((item: { name: string }) => item.name)).toEqual(["cleanup.acme"]);
  });

  it("refuses bad arguments in one line with a non-zero exit, and has --help", async () => {
    for (const [args, mentions] of [
      [["schedules", "extra"], /too many arguments for 'schedules'/],
      [["schedules", "--verbose"], /unknown option '--verbose'/],
    ] as const) {
      const result = await cli(...args);
      expect(result.code).not.toBe(0);
      expect(stderrLines(result)).toHaveLength(1);
      expect(stderrLines(result)[0]).toMatch(mentions);
    }
    const help = await runCli(["schedules", "--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^Usage: conveyor schedules /);
  });
});
