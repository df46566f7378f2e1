/**
 * The tenant-fair claim's index exists only once fairness needs it
 * (migration 010): every insert would otherwise pay for an entry in it. A
 * worker with fairness "tenant" builds it as it starts, and so does setting
 * a tenant cap; many at once build it once.
 */
import { afterEach, describe, expect, it } from "vitest";
import { defineJob } from "../packages/core/src/index.js";
import { createTestConveyor, dbOf, type TestConveyor } from "./helpers/database.js";
import { emptyPayload, silent, sql } from "./worker/support.js";

const noop = defineJob({ kind: "noop", schema: emptyPayload, handler: () => {} });

let t: TestConveyor;
afterEach(() => t?.cleanup());

async function hasTenantIndex(): Promise<boolean> {
  const { rows } = await sql(t.conveyor, "SELECT 1 FROM pg_indexes WHERE schemaname = $1 AND indexname = 'jobs_ready_by_tenant_idx'", [t.schema]);
  return rows.length === 1;
}

describe("the tenant index", () => {
  it("is not there after migrating, and a worker without fairness leaves it out", async () => {
    t = await createTestConveyor({ jobs: [noop], logger: silent });
    expect(await hasTenantIndex()).toBe(false);
    const worker = t.conveyor.worker({ fairness: "off" });
    await worker.start();
    await worker.stop();
    expect(await hasTenantIndex()).toBe(false);
  });

  it("is built by a worker with fairness \"tenant\" before it claims, and that worker then claims fairly", async () => {
    t = await createTestConveyor({ jobs: [noop], logger: silent });
    await t.conveyor.enqueue(noop, {}, { tenant: "a" });
    const worker = t.conveyor.worker({ fairness: "tenant", pollIntervalMs: 50 });
    await worker.start();
    try {
      expect(await hasTenantIndex()).toBe(true);
      const { rows } = await sql(t.conveyor, "SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass($1)", [`"${t.schema}".jobs_ready_by_tenant_idx`]);
      expect(rows).toEqual([{ indisvalid: true }]);
    } finally {
      await worker.stop();
    }
  });

  it("is built by setting a tenant cap, not by clearing one", async () => {
    t = await createTestConveyor({ jobs: [noop], logger: silent });
    await t.conveyor.queues.setTenantLimits("a", { concurrency: null });
    expect(await hasTenantIndex()).toBe(false);
    await t.conveyor.queues.setTenantLimits("a", { concurrency: 3 });
    expect(await hasTenantIndex()).toBe(true);
  });

  it("is built once when many processes ask for it at once", async () => {
    t = await createTestConveyor({ jobs: [noop], logger: silent, poolSize: 8 });
    const built = await Promise.all(Array.from({ length: 6 }, () => dbOf(t.conveyor).tenantIndexEnsure()));
    expect(built.filter(Boolean)).toHaveLength(1);
    expect(await hasTenantIndex()).toBe(true);
    expect(await dbOf(t.conveyor).tenantIndexEnsure()).toBe(false);
  });
});
