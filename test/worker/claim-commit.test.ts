import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CLAIM_LOCK_TIMEOUT_MS } from "../../packages/core/src/core/defaults.js";
import { freshExecutionIds } from "../../packages/core/src/store/execution-ids.js";
import { bindQueries } from "../../packages/core/src/store/queries.js";
import { connectTestClient, createTestConveyor, storeOf, type TestConveyor } from "../helpers/database.js";
import { sql } from "./support.js";

// Claims commit without waiting for the WAL flush (see claim-fragments.ts):
// the setting must cover the claim's own transaction and nothing after it,
// or an enqueue that follows on the same pooled connection would stop being
// durable when it resolves.
describe("claim commits", () => {
  let t: TestConveyor;

  beforeAll(async () => {
    t = await createTestConveyor({ poolSize: 1 });
    await sql(t.conveyor, "INSERT INTO {{schema}}.queue_settings (name, concurrency_limit) VALUES ('limited', 5)");
  });

  afterAll(async () => {
    await t?.cleanup();
  });

  async function enqueue(queue: string): Promise<void> {
    await sql(
      t.conveyor,
      "INSERT INTO {{schema}}.jobs (id, tenant, queue, kind, payload, max_attempts) VALUES (gen_random_uuid(), 't', $1, 'k', '{}', 1)",
      [queue],
    );
  }

  const claims = [
    ["the fast claim", "jobClaim", "default", ["w1", 10, ["k"], null, 60_000, freshExecutionIds(10, Date.now())]],
    ["the tenant-fair claim", "jobClaimFair", "default", ["w1", 10, ["k"], null, 60_000, freshExecutionIds(10, Date.now()), CLAIM_LOCK_TIMEOUT_MS]],
    [
      "the limited queue's claim",
      "jobClaimFromLimitedQueue",
      "limited",
      ["w1", 10, ["k"], "limited", 60_000, freshExecutionIds(10, Date.now()), CLAIM_LOCK_TIMEOUT_MS],
    ],
  ] as const;

  for (const [label, name, queue, values] of claims) {
    it(`${label} turns synchronous_commit off for its own transaction only`, async () => {
      await enqueue(queue);
      const client = await connectTestClient();
      try {
        await client.query("BEGIN");
        const { rows } = await client.query(bindQueries(t.schema)[name].text, [...values]);
        expect(rows).toHaveLength(1);
        expect((await client.query("SHOW synchronous_commit")).rows[0].synchronous_commit).toBe("off");
        await client.query("COMMIT");
        expect((await client.query("SHOW synchronous_commit")).rows[0].synchronous_commit).toBe("on");
      } finally {
        await client.end();
      }
    });
  }

  it("leaves the pooled connection committing synchronously after a claim", async () => {
    await enqueue("default");
    // poolSize 1: the claim and the SHOW run on the same connection.
    const claimed = await storeOf(t.conveyor).jobClaim("w1", 10, ["k"], null, 60_000);
    expect(claimed).toHaveLength(1);
    const { rows } = await t.conveyor.pool.query("SHOW synchronous_commit");
    expect(rows[0].synchronous_commit).toBe("on");
  });
});
