/**
 * A worker's claim sends about as many fresh execution ids as its previous
 * claim took (CLAIM_MIN_FRESH_IDS at least); rows beyond them take an id
 * the database makes. Every claimed job still gets its own execution, with
 * the id the job row carries.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CLAIM_MIN_FRESH_IDS } from "../../src/core/defaults.js";
import { defineJob } from "../../src/index.js";
import { ClaimStore } from "../../src/store/claim-store.js";
import { createTestConveyor, type TestConveyor } from "../helpers/database.js";
import { emptyPayload, silent, sql } from "./support.js";

const noop = defineJob({ kind: "noop", schema: emptyPayload, handler: () => {} });

let t: TestConveyor;
let claims: ClaimStore;
beforeAll(async () => {
  t = await createTestConveyor({ jobs: [noop], logger: silent });
  claims = new ClaimStore(t.conveyor.pool, t.schema, null);
});
afterAll(async () => {
  await claims?.close();
  await t?.cleanup();
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
  it("sends ids for about as many jobs as it took last time, and every claimed job gets its own execution", async () => {
    const sent = idsSent();
    await t.conveyor.enqueueMany(Array.from({ length: 100 }, () => ({ job: noop, payload: {} })));
    const first = await claims.jobClaim("w", 100, ["noop"], null, 60_000);
    expect(first).toHaveLength(100);
    await t.conveyor.enqueueMany(Array.from({ length: 100 }, () => ({ job: noop, payload: {} })));
    const second = await claims.jobClaim("w", 100, ["noop"], null, 60_000);
    expect(second).toHaveLength(100);
    expect(sent).toEqual([CLAIM_MIN_FRESH_IDS, 100]);

    const claimed = [...first, ...second];
    expect(new Set(claimed.map((job) => job.executionId)).size).toBe(200);
    const { rows } = await sql(
      t.conveyor,
      `SELECT count(*)::int AS n FROM {{schema}}.jobs AS j JOIN {{schema}}.job_executions AS e
         ON e.id = j.current_execution_id AND e.job_id = j.id AND e.attempt = j.attempts AND e.outcome = 'running'
       WHERE j.status = 'running'`,
    );
    expect(rows[0].n).toBe(200);
  });
});
