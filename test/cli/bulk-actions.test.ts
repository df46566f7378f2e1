/**
 * `conveyor bulk …` as a real process (the built CLI) against the test
 * database: an action run to its end with its estimate, progress lines and
 * last line (or --json), who asked on the record, refusals as one line and
 * a non-zero exit with nothing stored, list/show/cancel of operations, and
 * Ctrl-C cancelling a running operation cleanly.
 */
import { hostname, userInfo } from "node:os";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { defineJob } from "../../packages/core/src/index.js";
import { emptyTables, jobsIn, tune } from "../bulk-actions-support.js";
import { countRows, createTestConveyor, type TestConveyor } from "../helpers/database.js";
import { CliServer, cliEnv, REPO_ROOT, runCli, silent, stderrLines } from "./support.js";
import { waitFor } from "../helpers/wait-for.js";

const item = defineJob({ kind: "item", schema: z.object({ n: z.number().int() }), handler: () => {} });

let test: TestConveyor;
const bulk = (...args: string[]) => runCli(["bulk", ...args, "--schema", test.schema]);

beforeAll(async () => {
  test = await createTestConveyor({ jobs: [item], logger: silent });
});
afterAll(() => test?.cleanup());
beforeEach(async () => {
  tune(test.conveyor, { batchSize: 500, pauseMs: 0 });
  await emptyTables(test.conveyor);
});

const ME = `cli:${userInfo().username}@${hostname()}`;

describe("conveyor bulk <action>", () => {
  it("says how many jobs the filter covers, shows progress and says what it did", async () => {
    const dead = await jobsIn(test.conveyor, "dead", 12, { queue: "mail" });
    await jobsIn(test.conveyor, "dead", 2, { queue: "other" });
    const result = await bulk("retry", "--status", "dead", "--queue", "mail", "--batch-size", "3");
    expect(result.code, result.stderr).toBe(0);
    const id = /operation ([0-9a-f-]{36})/.exec(result.stdout)![1]!;
    expect(result.stdout).toBe(`retried 12 jobs (operation ${id})\n`);
    const lines = stderrLines(result);
    expect(lines[0]).toBe(`bulk retry: the filter covers 12 jobs (an estimate on large tables); operation ${id}; Ctrl-C stops it`);
    // Not a terminal: a line per further tenth, then the end.
    expect(lines.length).toBeGreaterThan(3);
    expect(lines.at(-1)).toMatch(/^bulk retry \[#{30}\] 100% 12 jobs/);
    expect(await countRows(test.conveyor, "jobs", "id = ANY($1) AND status = 'queued'", [dead])).toBe(12);
    expect(await test.conveyor.bulkActions.get(id)).toMatchObject({ status: "succeeded", touched: 12, requestedBy: ME, filter: { status: ["dead"], queue: "mail" } });
  });

  it("prints the operation's JSON with --json, for set-priority (a negative one) and move", async () => {
    await jobsIn(test.conveyor, "queued", 4, { queue: "mail" });
    const prioritized = await bulk("set-priority", "-20", "--queue", "mail", "--json");
    expect(prioritized.code, prioritized.stderr).toBe(0);
    expect(JSON.parse(prioritized.stdout)).toMatchObject({ action: "set_priority", priority: -20, status: "succeeded", touched: 4, total: 4, requestedBy: ME });
    const moved = await bulk("move", "mail.later", "--queue", "mail", "--json");
    expect(JSON.parse(moved.stdout)).toMatchObject({ action: "move", queue: "mail.later", touched: 4 });
    expect(await countRows(test.conveyor, "jobs", "queue = 'mail.later' AND priority = -20")).toBe(4);
  });

  it("refuses bad input with one line and a non-zero exit, storing nothing", async () => {
    await jobsIn(test.conveyor, "queued", 2);
    for (const [args, pattern] of [
      [["retry"], /the filter is empty.*--all/],
      [["cancel", "--tenant", "acme"], /the filter is empty/],
      [["set-priority", "5000", "--kind", "item"], /-1000 to 1000/],
      [["move", "no spaces", "--kind", "item"], /queue must be/],
      [["purge", "--status", "queued"], /filter.status selects no job purge touches/],
      [["retry", "--status", "deadd"], /--status/],
      [["cancel", "01900000-0000-7000-8000-000000000000", "--kind", "item"], /not both/],
      [["show", "not-an-id"], /UUID/],
      [["frobnicate", "--all"], /unknown command/],
    ] as Array<[string[], RegExp]>) {
      const result = await bulk(...args);
      expect(result.code, args.join(" ")).not.toBe(0);
      const lines = stderrLines(result);
      expect(lines, `${args.join(" ")}: ${result.stderr}`).toHaveLength(1);
      expect(lines[0], args.join(" ")).toMatch(pattern);
    }
    expect(await countRows(test.conveyor, "bulk_actions")).toBe(0);
    expect(await countRows(test.conveyor, "jobs", "status = 'queued'")).toBe(2);
    // --all means it.
    const all = await bulk("cancel", "--all");
    expect(all.code, all.stderr).toBe(0);
    expect(all.stdout).toMatch(/^cancelled 2 jobs/);
  });
});

describe("conveyor bulk list, show and cancel <id>", () => {
  it("lists, shows and cancels operations", async () => {
    await jobsIn(test.conveyor, "queued", 30);
    const done = await test.conveyor.bulkActions.run((await test.conveyor.bulkActions.start({ action: "purge", filter: { queue: "q1" } })).id);
    tune(test.conveyor, { batchSize: 1, pauseMs: 60_000 });
    const running = await test.conveyor.bulkActions.start({ action: "set_priority", filter: { kind: "item" }, priority: 2, requestedBy: "ops" });
    await waitFor("a first batch", async () => (await test.conveyor.bulkActions.get(running.id))!.touched === 1, 30_000);

    const list = await bulk("list");
    expect(list.code, list.stderr).toBe(0);
    const rows = list.stdout.trim().split("\n");
    expect(rows[0]).toMatch(/^ID +ACTION +STATUS +TOUCHED +TOTAL +TENANT +REQUESTED BY +CREATED$/);
    expect(rows[1]).toMatch(new RegExp(`^${running.id} +set_priority +running +1 +30 +\\* +ops `));
    expect(rows[2]).toMatch(new RegExp(`^${done.id} +purge +succeeded +0 +0 `));
    const json = JSON.parse((await bulk("list", "--json", "--limit", "1")).stdout);
    expect(json.items.map((operation: { id: string }) => operation.id)).toEqual([running.id]);
    expect(json.nextCursor).toEqual(expect.any(String));

    const show = await bulk("show", running.id);
    expect(show.stdout).toContain(`id:            ${running.id}`);
    expect(show.stdout).toMatch(/priority: +2\n/);
    expect(show.stdout).toMatch(/filter: +\{"kind":"item"\}\n/);
    const missing = await bulk("show", "01900000-0000-7000-8000-000000000000");
    expect(missing.code).toBe(1);
    expect(stderrLines(missing)).toEqual(["conveyor: bulk action 01900000-0000-7000-8000-000000000000 not found"]);

    const cancelled = await bulk("cancel", running.id);
    expect(cancelled.code, cancelled.stderr).toBe(0);
    expect(cancelled.stdout).toMatch(/^cancellation requested for operation .*: it stops after the batch in progress/);
    const again = await bulk("cancel", done.id);
    expect(again.code).toBe(1);
    expect(stderrLines(again)[0]).toMatch(/already ended \(succeeded\); nothing changed/);
  });
});

it("answers --help on every bulk command", async () => {
  for (const command of [[], ["retry"], ["cancel"], ["purge"], ["set-priority"], ["move"], ["list"], ["show"]]) {
    const help = await runCli(["bulk", ...command, "--help"]);
    expect(help.code, help.stderr).toBe(0);
    expect(help.stdout).toMatch(new RegExp(`^Usage: conveyor bulk${command.length ? ` ${command[0]}` : ""} `));
  }
});

describe("Ctrl-C", () => {
  it("cancels the running operation cleanly, keeping what it did, and exits 130", async () => {
    await jobsIn(test.conveyor, "queued", 300);
    const server = new CliServer(["bulk", "set-priority", "7", "--kind", "item", "--batch-size", "2", "--schema", test.schema], {
      env: cliEnv(),
      cwd: REPO_ROOT,
    });
    try {
      await waitFor("a few batches", async () => (await countRows(test.conveyor, "jobs", "priority = 7")) >= 4, 30_000);
      const code = await server.stop("SIGINT");
      expect(code, server.output()).toBe(130);
      expect(server.stderr).toMatch(/stopping after the batch in progress/);
      expect(server.stderr).toMatch(/bulk set_priority cancelled: reprioritized \d+ jobs before it stopped/);
      const [operation] = (await test.conveyor.bulkActions.list()).items;
      expect(operation).toMatchObject({ status: "cancelled", cancelRequested: true });
      expect(operation!.touched).toBeLessThan(300);
      expect(await countRows(test.conveyor, "jobs", "priority = 7")).toBe(operation!.touched);
    } finally {
      if (server.child.exitCode === null) await server.stop("SIGKILL");
    }
  });
});
