/**
 * `conveyor jobs list` with every search flag and `conveyor jobs count`, as
 * real processes (the built CLI): what each finds, human and --json output,
 * estimated counts on a store past the exact-count limit, bad flags.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { quoteIdent } from "../../packages/core/src/store/db.js";
import { createTestConveyor, type TestConveyor } from "../helpers/database.js";
import { fillJobsSql } from "../helpers/fill-jobs.js";
import { ERRORS, fixtureJobs, idsWhere, insertFixtureJobs } from "../helpers/search-fixture.js";
import { type CliResult, mapLimit, runCli, silent, stderrLines } from "./support.js";
import { sql } from "../worker/support.js";

const DAY = 24 * 60 * 60 * 1000;
const jobs = fixtureJobs(42, Date.now() - 10 * DAY);

let test: TestConveyor;
let big: TestConveyor;

const cli = (...args: string[]) => runCli([...args, "--schema", test.schema]);
const json = (result: CliResult) => {
  expect(result.code, result.stderr).toBe(0);
  return JSON.parse(result.stdout);
};

beforeAll(async () => {
  test = await createTestConveyor({ logger: silent });
  await insertFixtureJobs(test.conveyor.pool, quoteIdent(test.schema), jobs);
  // Past countJobs' exact-count limit (10,000).
  big = await createTestConveyor({ logger: silent });
  await sql(big.conveyor, fillJobsSql(12_000, 60 * 60 * 1000));
  await sql(big.conveyor, "ANALYZE {{schema}}.jobs");
});
afterAll(async () => {
  await big?.cleanup();
  await test?.cleanup();
});

describe("conveyor jobs list and count", () => {
  it("find exactly the jobs each flag names, alone and together", async () => {
    const third = jobs[21]!;
    const cases: Array<[string[], (job: (typeof jobs)[number]) => boolean]> = [
      [["--queue", "mail"], (job) => job.queue === "mail"],
      [["--status", "dead,cancelled", "--tenant", "acme"], (job) => (job.status === "dead" || job.status === "cancelled") && job.tenant === "acme"],
      [["--kind", "invoice.charge"], (job) => job.kind === "invoice.charge"],
      [["--id", third.id.slice(0, 18)], (job) => job.id.startsWith(third.id.slice(0, 18))],
      [["--idempotency-key", "idem-16"], (job) => job.idempotencyKey === "idem-16"],
      [["--unique-key", "unique-15"], (job) => job.uniqueKey === "unique-15"],
      [["--payload", '{"customerId":2,"plan":"free"}'], (job) => job.payload.customerId === 2 && job.payload.plan === "free"],
      [["--error", "30% OF BUDGET_X"], (job) => job.error === ERRORS[1]],
      [["--created-after", jobs[10]!.createdAt.toISOString(), "--created-before", jobs[20]!.createdAt.toISOString()], (job) => job.createdAt >= jobs[10]!.createdAt && job.createdAt < jobs[20]!.createdAt],
      [["--finished-after", jobs[30]!.createdAt.toISOString()], (job) => job.finishedAt !== null && job.finishedAt >= jobs[30]!.createdAt],
      [["--finished-before", jobs[30]!.createdAt.toISOString(), "--queue", "reports"], (job) => job.finishedAt !== null && job.finishedAt < jobs[30]!.createdAt && job.queue === "reports"],
    ];
    const results = await mapLimit(cases, 4, async ([flags]) => [await cli("jobs", "list", ...flags, "--limit", "1000", "--json"), await cli("jobs", "count", ...flags, "--json")] as const);
    for (const [index, [flags, match]] of cases.entries()) {
      const expected = idsWhere(jobs, match);
      expect(expected.length, flags.join(" ")).toBeGreaterThan(0);
      const [list, count] = results[index]!;
      expect(json(list).items.map((job: { id: string }) => job.id), flags.join(" ")).toEqual(expected);
      expect(json(count), flags.join(" ")).toEqual({ count: expected.length, estimated: false });
    }
  });

  it("prints a count for people", async () => {
    const one = await cli("jobs", "count", "--idempotency-key", "idem-16");
    expect([one.code, one.stdout]).toEqual([0, "1 job\n"]);
    const none = await cli("jobs", "count", "--queue", "nowhere");
    expect([none.code, none.stdout]).toEqual([0, "0 jobs\n"]);
    const all = await cli("jobs", "count");
    expect([all.code, all.stdout]).toEqual([0, `${jobs.length} jobs\n`]);
  });

  it("marks a count above 10,000 as the planner's estimate, and counts each state of a queue exactly up to 1,000", async () => {
    const human = await runCli(["jobs", "count", "--schema", big.schema]);
    expect(human.code, human.stderr).toBe(0);
    expect(human.stdout).toMatch(/^~[\d,]+ jobs \(estimated\)\n$/);
    const counted = json(await runCli(["jobs", "count", "--schema", big.schema, "--json"]));
    expect(counted.estimated).toBe(true);
    // Freshly analyzed: the estimate is the table's size, give or take the
    // one row the planner assumes for each empty partition (a day ahead).
    expect(counted.count).toBeGreaterThanOrEqual(12_000);
    expect(counted.count).toBeLessThan(12_020);
    expect(json(await runCli(["jobs", "count", "--status", "dead", "--schema", big.schema, "--json"]))).toEqual({ count: 120, estimated: false });
    const table = await runCli(["queues", "--schema", big.schema]);
    expect(table.code, table.stderr).toBe(0);
    const row = table.stdout.split("\n").find((line) => line.startsWith("q3 "))!;
    // 600 jobs in q3 (test/helpers/fill-jobs.ts), no state above 1,000: every one counted, none marked ~.
    expect(row.split(/\s+/).slice(1, 9)).toEqual(["12", "48", "0", "12", "0", "516", "12", "0"]);
  });

  it("refuses bad flags with one line naming them, and exits non-zero", async () => {
    const cases: Array<[string[], RegExp]> = [
      [["jobs", "count", "--status", "done"], /--status.*expected one or more of waiting, queued/],
      [["jobs", "count", "--payload", "[1,2]"], /--payload.*expected a JSON object/],
      [["jobs", "list", "--payload", "{nope"], /--payload.*expected a JSON object/],
      [["jobs", "count", "--payload", '{"order":{"note":"\\ud800"}}'], /--payload.*contains a lone UTF-16 surrogate, which is not valid Unicode \(at order\.note\)$/],
      [["jobs", "list", "--payload", '{"a\\u0000":1}'], /--payload.*contains a NUL character \(\\u0000\), which PostgreSQL cannot store \(at key "a\\u0000"\)$/],
      [["jobs", "count", "--created-after", "yesterday"], /--created-after.*ISO 8601/],
      [["jobs", "count", "--id", "01a"], /id must be a job id or at least its first 4 hexadecimal digits/],
      [["jobs", "list", "--id", "xyz1"], /id must be a job id or at least its first 4 hexadecimal digits/],
      [["jobs", "count", "--limit", "5"], /unknown option '--limit'/],
      [["jobs", "count", "extra"], /too many arguments for 'count'/],
    ];
    const results = await mapLimit(cases, 4, ([args]) => cli(...args));
    for (const [index, [args, mentions]] of cases.entries()) {
      const result = results[index]!;
      expect(result.code, args.join(" ")).not.toBe(0);
      expect(stderrLines(result), `${args.join(" ")}\n${result.stderr}`).toHaveLength(1);
      expect(stderrLines(result)[0], args.join(" ")).toMatch(mentions);
    }
  });

  it("lists every search flag in --help", async () => {
    for (const command of ["list", "count"]) {
      const help = await runCli(["jobs", command, "--help"]);
      expect(help.code).toBe(0);
      for (const flag of ["--status", "--kind", "--queue", "--tenant", "--id", "--idempotency-key", "--unique-key", "--payload", "--error", "--created-after", "--created-before", "--finished-after", "--finished-before", "--json"]) {
        expect(help.stdout, `${command} ${flag}`).toContain(flag);
      }
    }
  });
});
