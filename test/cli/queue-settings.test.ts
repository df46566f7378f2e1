/**
 * `conveyor queues pause|resume|limit` as real processes (the built CLI), in
 * a schema of this file's own; `conveyor queues` shows what is set.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestConveyor, type TestConveyor } from "../helpers/database.js";
import { assertBuilt, type CliResult, runCli, silent, stderrLines } from "./support.js";

let test: TestConveyor;
const cli = (...args: string[]) => runCli([...args, "--schema", test.schema]);
const ok = (result: CliResult) => {
  expect(result.code, result.stderr).toBe(0);
  return result.stdout;
};

beforeAll(async () => {
  assertBuilt();
  test = await createTestConveyor({ logger: silent });
});
afterAll(() => test?.cleanup());

describe("conveyor queues pause|resume|limit", () => {
  it("changes a queue's settings, and the queue list shows them", async () => {
    expect(ok(await cli("queues", "pause", "mail"))).toBe("queue mail: paused\n");
    expect(ok(await cli("queues", "limit", "mail", "--concurrency", "3", "--rate", "100/60000"))).toMatch(/^queue mail: paused, 3 at once, 100 per 1 min/);
    expect((await test.conveyor.queues.listSettings())[0]).toMatchObject({
      queue: "mail",
      paused: true,
      concurrency: 3,
      rateLimit: { count: 100, intervalMs: 60000 },
    });
    const table = ok(await cli("queues"));
    expect(table.split("\n")[0]).toMatch(/OLDEST READY\s+LIMITS$/);
    expect(table).toMatch(/^mail\s.*paused, 3 at once, 100 per 1 min/m);

    expect(JSON.parse(ok(await cli("queues", "limit", "mail", "--rate", "none", "--json")))).toMatchObject({
      queue: "mail",
      concurrency: 3,
      rateLimit: null,
    });
    expect(ok(await cli("queues", "resume", "mail"))).toBe("queue mail: 3 at once\n");
    const { items } = JSON.parse(ok(await cli("queues", "--json")));
    expect(items).toEqual([expect.objectContaining({ queue: "mail", paused: false, concurrency: 3, rateLimit: null })]);
  });

  it("deletes a queue's settings, and says in one line when there are none", async () => {
    expect(ok(await cli("queues", "pause", "mial"))).toBe("queue mial: paused\n");
    expect(ok(await cli("queues", "delete", "mial"))).toBe("queue mial: settings deleted\n");
    expect((await test.conveyor.queues.listSettings()).map((q) => q.queue)).not.toContain("mial");
    const again = await cli("queues", "delete", "mial");
    expect(again.code).not.toBe(0);
    expect(stderrLines(again)).toEqual(['conveyor: queue "mial" has no settings to delete']);
    expect(JSON.parse(ok(await cli("queues", "limit", "mial", "--concurrency", "2", "--json")))).toMatchObject({ queue: "mial", concurrency: 2 });
    expect(JSON.parse(ok(await cli("queues", "delete", "mial", "--json")))).toEqual({ queue: "mial", deleted: true });
  });

  it("refuses bad arguments with one line on stderr and a non-zero exit", async () => {
    const cases: Array<[string[], RegExp]> = [
      [["queues", "limit", "mail"], /give --concurrency and\/or --rate/],
      [["queues", "limit", "mail", "--concurrency", "0"], /--concurrency.*expected a whole number >= 1 or "none"/],
      [["queues", "limit", "mail", "--rate", "fast"], /--rate.*<count>\/<interval ms>/],
      [["queues", "limit", "mail", "--rate", "5/0"], /rateLimit\.intervalMs must be an integer from 1/],
      [["queues", "pause", "bad name"], /queue must be 1-128 characters/],
      [["queues", "resume"], /missing required argument 'queue'/],
      [["queues", "delete", "bad name"], /queue must be 1-128 characters/],
    ];
    for (const [args, mentions] of cases) {
      const result = await cli(...args);
      expect(result.code, args.join(" ")).not.toBe(0);
      expect(stderrLines(result), `${args.join(" ")}\n${result.stderr}`).toHaveLength(1);
      expect(stderrLines(result)[0], args.join(" ")).toMatch(mentions);
    }
    expect((await test.conveyor.queues.listSettings()).map((s) => s.queue)).not.toContain("bad name");
  });
});

describe("conveyor tenants [limit]", () => {
  it("sets and removes a tenant's cap, and lists what is set", async () => {
    expect(ok(await cli("tenants"))).toBe("no tenant settings (every tenant is uncapped)\n");
    expect(ok(await cli("tenants", "limit", "acme", "--concurrency", "4"))).toBe("tenant acme: 4 at once\n");
    expect(await test.conveyor.queues.listTenantSettings()).toEqual([expect.objectContaining({ tenant: "acme", concurrency: 4 })]);
    expect(ok(await cli("tenants"))).toMatch(/^TENANT\s+CAP\nacme\s+4 at once\n$/);
    expect(JSON.parse(ok(await cli("tenants", "limit", "acme", "--concurrency", "none", "--json")))).toMatchObject({
      tenant: "acme",
      concurrency: null,
    });
    expect(JSON.parse(ok(await cli("tenants", "--json"))).items).toEqual([expect.objectContaining({ tenant: "acme", concurrency: null })]);
  });

  it("refuses bad arguments with one line on stderr and a non-zero exit", async () => {
    const cases: Array<[string[], RegExp]> = [
      [["tenants", "limit", "acme"], /required option '--concurrency <n>' not specified/],
      [["tenants", "limit", "acme", "--concurrency", "-1"], /--concurrency.*expected a whole number >= 1 or "none"/],
      [["tenants", "limit", "", "--concurrency", "2"], /tenant/],
    ];
    for (const [args, mentions] of cases) {
      const result = await cli(...args);
      expect(result.code, args.join(" ")).not.toBe(0);
      expect(stderrLines(result), `${args.join(" ")}\n${result.stderr}`).toHaveLength(1);
      expect(stderrLines(result)[0], args.join(" ")).toMatch(mentions);
    }
  });
});
