/**
 * `conveyor queues key-limit|key-limit-delete|key-limits|keys|key` as real
 * processes (the built CLI), in a schema of this file's own.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestConveyor, type TestConveyor } from "../helpers/database.js";
import { item } from "../helpers/jobs.js";
import { assertBuilt, type CliResult, runCli, silent, stderrLines } from "./support.js";

let test: TestConveyor;
const cli = (...args: string[]) => runCli([...args, "--schema", test.schema]);
const ok = (result: CliResult) => {
  expect(result.code, result.stderr).toBe(0);
  return result.stdout;
};

beforeAll(async () => {
  assertBuilt();
  test = await createTestConveyor({ logger: silent, jobs: [item] });
});
afterAll(() => test?.cleanup());

describe("conveyor queues key-limit and friends", () => {
  it("sets a default and an override, lists them, shows busy keys and one key, and deletes them", async () => {
    expect(ok(await cli("queues", "key-limit", "webhooks", "--concurrency", "5", "--rate", "100/60000"))).toBe(
      "queue webhooks, every key: 5 at once, 100 per 1 min 0 s\n",
    );
    expect(ok(await cli("queues", "key-limit", "webhooks", "--key", "slow.example", "--throttle", "2000"))).toBe(
      "queue webhooks, key slow.example: 1 per 2.0 s\n",
    );
    expect(ok(await cli("queues"))).toMatch(/^webhooks\s.*per key: 5 at once, 100 per 1 min 0 s$/m);
    expect(ok(await cli("queues", "key-limits", "webhooks"))).toMatch(/^KEY\s+LIMITS\n\(every key\)\s+5 at once, 100 per 1 min 0 s\nslow\.example\s+1 per 2\.0 s\n$/);
    expect(JSON.parse(ok(await cli("queues", "key-limits", "webhooks", "--json"))).items).toHaveLength(2);

    await test.conveyor.enqueueMany([
      ...Array.from({ length: 3 }, () => ({ job: item, payload: { n: 1 }, queue: "webhooks", limitKey: "busy.example" })),
      { job: item, payload: { n: 2 }, queue: "webhooks", limitKey: "slow.example" },
    ]);
    expect(ok(await cli("queues", "keys", "webhooks"))).toMatch(
      /^KEY\s+WAITING\s+RUNNING\s+LIMITS\s+FROM\nbusy\.example\s+3\s+0\s+5 at once, 100 per 1 min 0 s\s+default\nslow\.example\s+1\s+0\s+1 per 2\.0 s\s+override\n$/,
    );
    const facts = ok(await cli("queues", "key", "webhooks", "slow.example"));
    expect(facts).toMatch(/^state:\s+ready$/m);
    expect(facts).toMatch(/^limits:\s+1 per 2\.0 s \(override\)$/m);
    expect(JSON.parse(ok(await cli("queues", "key", "webhooks", "busy.example", "--json")))).toMatchObject({ key: "busy.example", ready: 3, state: "ready" });

    expect(ok(await cli("queues", "key-limit-delete", "webhooks", "--key", "slow.example"))).toBe("queue webhooks, key slow.example: override deleted\n");
    expect(ok(await cli("queues", "key-limit-delete", "webhooks"))).toBe("queue webhooks: key limits deleted\n");
    expect(ok(await cli("queues", "key-limits", "webhooks"))).toBe("queue webhooks has no key limits\n");
    // Idempotent, and says so: a reset at startup can always run it.
    expect(ok(await cli("queues", "key-limit-delete", "webhooks"))).toBe("queue webhooks had no key limits: nothing to delete\n");
    expect(JSON.parse(ok(await cli("queues", "key-limit-delete", "webhooks", "--json")))).toEqual({ queue: "webhooks", key: null, deleted: false });
  });

  it("refuses bad arguments with one line on stderr and a non-zero exit, changing nothing", async () => {
    const cases: Array<[string[], RegExp]> = [
      [["queues", "key-limit", "q"], /give --concurrency, --rate and\/or --throttle/],
      [["queues", "key-limit", "q", "--concurrency", "0"], /--concurrency.*expected a whole number >= 1 or "none"/],
      [["queues", "key-limit", "q", "--throttle", "soon"], /--throttle.*expected a whole number of ms >= 1 or "none"/],
      [["queues", "key-limit", "q", "--rate", "5/1", "--throttle", "10"], /throttleMs is exclusive with rateLimit/],
      [["queues", "key-limit", "q", "--key", "", "--concurrency", "1"], /key must be a string of 1 to 256/],
      [["queues", "key-limit", "bad name", "--concurrency", "1"], /queue must be 1-128 characters/],
      [["queues", "key-limit-delete", "q", "--key", "nobody"], /key "nobody" has no limits of its own in queue "q"/],
      [["queues", "keys", "q", "--limit", "0"], /limit must be an integer from 1 to 100/],
      [["queues", "key", "q"], /missing required argument 'key'/],
    ];
    for (const [args, mentions] of cases) {
      const result = await cli(...args);
      expect(result.code, args.join(" ")).not.toBe(0);
      expect(stderrLines(result), `${args.join(" ")}\n${result.stderr}`).toHaveLength(1);
      expect(stderrLines(result)[0], args.join(" ")).toMatch(mentions);
    }
    expect(await test.conveyor.keyLimits.list()).toEqual([]);
  });
});
