/**
 * How a worker claims, against a real PostgreSQL, with the stores it uses:
 * - It reads which queues are limited, and whether tenants have caps, at most
 *   once a second (CLAIM_RESTRICTIONS_REFRESH_MS). Only its first claim waits
 *   for that read; later reads go out beside a claim, and the claim after
 *   them uses what they found.
 * - After a claim that found fewer ready jobs than it asked for, the next
 *   sends fresh execution ids for about twice as many as that one took
 *   (CLAIM_MIN_FRESH_IDS at least), and rows beyond them take an id the
 *   database makes; after a claim that got all it asked for, a full set.
 *   Every claimed job still gets its own execution, with the id the job row
 *   carries.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CLAIM_MIN_FRESH_IDS, CLAIM_RESTRICTIONS_REFRESH_MS } from "../../packages/core/src/core/defaults.js";
import { defineJob } from "../../packages/core/src/index.js";
import type { ClaimStore } from "../../packages/core/src/store/claim-store.js";
import { QueueSettingsStore } from "../../packages/core/src/store/queue-settings-store.js";
import { ClaimChooser } from "../../packages/core/src/worker/claim-chooser.js";
import { connectionOf, createTestConveyor, dbOf, type TestConveyor } from "../helpers/database.js";
import { emptyPayload, silent, sql } from "./support.js";

const noop = defineJob({ kind: "noop", schema: emptyPayload, handler: () => {} });

let t: TestConveyor;
let claims: ClaimStore;
beforeAll(async () => {
  t = await createTestConveyor({ jobs: [noop], logger: silent });
  claims = dbOf(t.conveyor).claimStoreOpen(connectionOf(t.conveyor), null);
});
afterAll(async () => {
  await claims?.close();
  await t?.cleanup();
});

describe("claim restrictions", () => {
  it("are awaited by the first claim only; a stale view is read beside the next claim and used by the one after", async () => {
    const events: string[] = [];
    const settings = new QueueSettingsStore(t.conveyor.pool, dbOf(t.conveyor).queries, t.schema);
    const read = settings.claimRestrictions.bind(settings);
    settings.claimRestrictions = async () => {
      events.push("read sent");
      const restrictions = await read();
      events.push("read done");
      return restrictions;
    };
    const store = {
      jobClaim: (...args: Parameters<ClaimStore["jobClaim"]>) => {
        events.push("claim sent");
        return claims.jobClaim(...args);
      },
    } as ClaimStore;
    const limited = dbOf(t.conveyor).limitedClaims;
    const chooser = new ClaimChooser(store, limited, settings, "off", () => {});
    const reads = chooser.testSignals.restrictionsRead;
    reads.init();
    const request = { workerId: "w", limit: 5, kinds: ["noop"], queues: null, leaseMs: 60_000 };

    await chooser.claim(request);
    expect(events).toEqual(["read sent", "read done", "claim sent"]);
    expect((await reads.wait()).limitedQueues).toEqual([]);

    // A limit set now is not known to the view the worker holds.
    await t.conveyor.enqueue(noop, {}, { queue: "capped" });
    await t.conveyor.queues.setLimits("capped", { concurrency: 1 });
    // The view goes stale by the clock alone: only the interval passing makes the next claim read again.
    await new Promise((resolve) => setTimeout(resolve, CLAIM_RESTRICTIONS_REFRESH_MS + 50));
    events.length = 0;
    // Stale: the read goes out, and this claim does not wait for it (the fast claim skips the capped queue anyway).
    expect(await chooser.claim(request)).toEqual([]);
    expect(events.slice(0, 2)).toEqual(["read sent", "claim sent"]);
    expect((await reads.wait()).limitedQueues).toEqual(["capped"]);
    // The next claim knows the queue is limited and claims from it through the limited claim.
    const [job] = await chooser.claim(request);
    expect(job?.queue).toBe("capped");
  });
});

/** How many ids each claim sent ($6), by spying on the claim connection. */
function idsSent(): number[] {
  const sent: number[] = [];
  const pool = claims.pool as unknown as { query: (...args: unknown[]) => unknown };
  const original = pool.query;
  pool.query = function (this: unknown, ...args: unknown[]) {
    const values = (args[0] as { values: unknown[] }).values;
    sent.push(String(values[5]).split(",").length);
    return original.apply(this, args);
  };
  return sent;
}

describe("a worker's claim", () => {
  it("sends a full set of ids after a full claim, twice what it took after one that ran dry, and every job gets its own execution", async () => {
    const sent = idsSent();
    const claim = () => claims.jobClaim("w", 100, ["noop"], null, 60_000);
    const enqueue = (n: number) => t.conveyor.enqueueMany(Array.from({ length: n }, () => ({ job: noop, payload: {} })));
    expect(await claims.jobClaim("w", 10, ["noop"], null, 60_000)).toEqual([]); // ran dry: the next sends the minimum
    await enqueue(100);
    const first = await claim(); // 16 ids for 100 rows; the database makes the other 84
    await enqueue(30);
    const second = await claim(); // after a full claim: 100 ids; takes 30
    expect(await claim()).toEqual([]); // after taking 30: 60 ids
    expect(sent).toEqual([10, CLAIM_MIN_FRESH_IDS, 100, 60]);
    expect([first.length, second.length]).toEqual([100, 30]);

    const claimed = [...first, ...second];
    expect(new Set(claimed.map((job) => job.executionId)).size).toBe(130);
    const { rows } = await sql(
      t.conveyor,
      `SELECT count(*)::int AS n FROM {{schema}}.jobs AS j JOIN {{schema}}.job_attempts AS e
         ON e.id = j.current_execution_id AND e.job_id = j.id AND e.attempt = j.attempts AND e.outcome = 'running'
       WHERE j.status = 'running' AND j.id = ANY($1::uuid[])`,
      [claimed.map((job) => job.id)],
    );
    expect(rows[0].n).toBe(130);
  });
});
