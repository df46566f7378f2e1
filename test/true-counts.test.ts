/**
 * Per-queue counts on a store larger than the small-table limit (10,000
 * jobs), with states that hold no jobs: a count the exact count would deny
 * is never shown. Empty states are 0 and exact, small ones exact, and only
 * a state with more jobs than the per-queue limit is estimated, close to
 * its count; through the client (overview, queueStats) and GET /v1/queues,
 * for all tenants and for one. When counting runs past the time bound and
 * every state is estimated, an empty state is still 0.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readQueueCounts } from "../packages/core/src/client/counts.js";
import { SearchTimeoutError } from "../packages/core/src/core/errors.js";
import type { StatusCounts, StatusEstimated } from "../packages/core/src/core/overview.js";
import { JOB_STATUSES, type JobStatus } from "../packages/core/src/core/states.js";
import type { QueueStore } from "../packages/core/src/store/queue-store.js";
import { dbOf } from "./helpers/database.js";
import { call, createApiTest, rows, type ApiTest } from "./http/support.js";

let test: ApiTest;

/** The store: queue, tenant, state, how many. 12,130 jobs in all. */
const STORE: Array<[queue: string, tenant: string, status: JobStatus, count: number]> = [
  ["busy", "acme", "succeeded", 10_500],
  ["busy", "acme", "queued", 1_200],
  ["busy", "globex", "dead", 30],
  ["fresh", "globex", "queued", 400],
];

/** The jobs of STORE for `tenant` (all when null), by state, in `queue`. */
function truth(queue: string, tenant: string | null): StatusCounts {
  const counts = Object.fromEntries(JOB_STATUSES.map((status) => [status, 0])) as StatusCounts;
  for (const [q, t, status, count] of STORE) if (q === queue && (tenant === null || t === tenant)) counts[status] += count;
  return counts;
}

/** Every count is exact (and equal to the truth) when the truth is at most 1,000; above, estimated within 10%. */
function expectTrue(queue: string, tenant: string | null, counts: StatusCounts, estimated: StatusEstimated): void {
  const want = truth(queue, tenant);
  for (const status of JOB_STATUSES) {
    const label = `${queue} ${status} (${tenant ?? "all tenants"})`;
    if (want[status] <= 1_000) {
      expect([counts[status], estimated[status]], label).toEqual([want[status], false]);
    } else {
      expect(estimated[status], label).toBe(true);
      expect(counts[status], label).toBeGreaterThan(1_000);
      expect(Math.abs(counts[status] - want[status]) / want[status], label).toBeLessThan(0.1);
    }
  }
}

beforeAll(async () => {
  test = await createApiTest();
  for (const [queue, tenant, status, count] of STORE) {
    await rows(
      test,
      `INSERT INTO {{schema}}.jobs (id, tenant, queue, kind, payload, status, attempts, max_attempts, run_at,
                                    last_error, created_at, updated_at, started_at, finished_at)
       SELECT {{schema}}.uuid_v7(), $1, $2, 'item', jsonb_build_object('n', g), $3,
              CASE WHEN $3 = 'queued' THEN 0 ELSE 1 END, 5, now(),
              CASE WHEN $3 = 'dead' THEN jsonb_build_object('name', 'Error', 'message', 'boom') END,
              now(), now(),
              CASE WHEN $3 = 'queued' THEN NULL ELSE now() END,
              CASE WHEN $3 IN ('succeeded', 'dead') THEN now() END
       FROM generate_series(1, $4::int) AS g`,
      [tenant, queue, status, count],
    );
  }
  await rows(test, "ANALYZE {{schema}}.jobs");
}, 60_000);
afterAll(() => test?.cleanup());

describe("per-queue counts past the small-table limit", () => {
  it("show empty states as 0 and small ones exactly, for all tenants", async () => {
    const overview = await test.conveyor.overview();
    const byName = new Map(overview.queues.map((queue) => [queue.queue, queue]));
    expect([...byName.keys()].filter((name) => name === "busy" || name === "fresh")).toEqual(["busy", "fresh"]);
    for (const name of ["busy", "fresh"]) expectTrue(name, null, byName.get(name)!.counts, byName.get(name)!.estimated);

    const stats = await test.conveyor.queueOverview.queueStats();
    for (const name of ["busy", "fresh"]) {
      const item = stats.find((queue) => queue.queue === name)!;
      expectTrue(name, null, item.counts, item.estimated);
    }
  });

  it("show a tenant's empty states as 0, whatever other tenants hold", async () => {
    for (const tenant of ["acme", "globex"]) {
      const overview = await test.conveyor.overview({ tenant });
      for (const queue of overview.queues) expectTrue(queue.queue, tenant, queue.counts, queue.estimated);
      expect(overview.queues.map((queue) => queue.queue)).toContain("busy");
    }
  });

  it("answer GET /v1/queues the same way, for an admin and for a tenant", async () => {
    for (const [key, tenant] of [[test.keys.admin, null], [test.keys.acme, "acme"], [test.keys.globex, "globex"]] as const) {
      const response = await call(test.app, { url: "/v1/queues", key });
      expect(response.statusCode, response.body).toBe(200);
      const listed = response.json.items as Array<{ queue: string; counts: StatusCounts; estimated: StatusEstimated }>;
      for (const name of ["busy", "fresh"]) {
        const item = listed.find((queue) => queue.queue === name);
        if (item === undefined) {
          // A tenant's listing holds only the queues where it has jobs.
          expect(tenant, name).not.toBeNull();
          expect(Object.values(truth(name, tenant)).every((count) => count === 0), name).toBe(true);
          continue;
        }
        expectTrue(name, tenant, item.counts, item.estimated);
      }
    }
  });
});

describe("per-queue counts when counting runs past the time bound", () => {
  /** The client's store, except that counting the queues times out, so the counts fall back to estimates. */
  const timingOut = (): QueueStore => {
    const store = dbOf(test.conveyor).queues;
    return Object.assign(Object.create(store) as QueueStore, {
      queueCounts: () => Promise.reject(new SearchTimeoutError(1)),
    });
  };

  it("show every empty state as 0, for all tenants and for each, and every other close to its count", async () => {
    for (const tenant of [null, "acme", "globex"]) {
      const queues = await readQueueCounts(timingOut(), tenant, { perQueue: 1_000, table: 10_000, timeoutMs: 10_000 });
      for (const name of ["busy", "fresh"]) {
        const item = queues.find((queue) => queue.queue === name);
        const want = truth(name, tenant);
        if (item === undefined) continue; // a tenant's listing may leave out a queue where it has no jobs
        for (const status of JOB_STATUSES) {
          const label = `${name} ${status} (${tenant ?? "all tenants"}): ${item.counts[status]}, truly ${want[status]}`;
          if (want[status] === 0) expect(item.counts[status], label).toBe(0);
          else expect(item.counts[status], label).toBeGreaterThan(0);
          if (!item.estimated[status]) expect(item.counts[status], label).toBe(want[status]);
          else if (want[status] > 0) expect(Math.abs(item.counts[status] - want[status]) / want[status], label).toBeLessThan(0.1);
        }
      }
    }
  });
});
