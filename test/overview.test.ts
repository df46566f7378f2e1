/**
 * The overview and the per-queue counts: what each part reports for a store
 * whose every job is known (test/helpers/search-fixture.ts), for all
 * tenants and for one; counts exact on a small table, exact up to the
 * per-queue limit and estimated above it on a larger one; a part that does
 * not finish within the time bound left out and named.
 */
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Overview } from "../packages/core/src/core/overview.js";
import { JOB_STATUSES, type JobStatus } from "../packages/core/src/core/states.js";
import { quoteIdent } from "../packages/core/src/store/db.js";
import { connectTestClient, createTestConveyor, type TestConveyor } from "./helpers/database.js";
import { type FixtureJob, fixtureJobs, insertFixtureJobs, QUEUES, uuidAt } from "./helpers/search-fixture.js";
import { silent } from "./worker/support.js";

const DAY = 24 * 60 * 60 * 1000;
const jobs = fixtureJobs(42, Date.now() - 10 * DAY);
const WORKER = "fixture-worker";

let t: TestConveyor;
let schema: string;

/** Attempts that ended in the window (and one before it), as job_executions rows. */
const RECENT = [
  { job: jobs[4]!, outcome: "succeeded", error: null, agoMs: 60_000 },
  { job: jobs[11]!, outcome: "succeeded", error: null, agoMs: 120_000 },
  { job: jobs[18]!, outcome: "succeeded", error: null, agoMs: 180_000 },
  { job: jobs[3]!, outcome: "failed", error: "card declined", agoMs: 90_000 },
  { job: jobs[10]!, outcome: "failed", error: "card declined", agoMs: 30_000 },
  { job: jobs[17]!, outcome: "timeout", error: "timed out after 5000 ms", agoMs: 200_000 },
  { job: jobs[24]!, outcome: "cancelled", error: null, agoMs: 50_000 },
  // Ended 30 minutes ago: outside the 15-minute window.
  { job: jobs[25]!, outcome: "failed", error: "too old to count", agoMs: 30 * 60_000 },
];

beforeAll(async () => {
  t = await createTestConveyor({ logger: silent });
  schema = quoteIdent(t.schema);
  await insertFixtureJobs(t.conveyor.pool, schema, jobs);
  const now = Date.now();
  for (const [index, attempt] of RECENT.entries()) {
    const finished = new Date(now - attempt.agoMs);
    await t.conveyor.pool.query(
      `INSERT INTO ${schema}.job_executions (id, job_id, attempt, worker_id, started_at, finished_at, outcome, error)
       VALUES ($1, $2, 1, $3, $4, $4, $5, $6)`,
      [uuidAt(finished.getTime() - 10, index), attempt.job.id, WORKER, finished, attempt.outcome, attempt.error === null ? null : { name: "Error", message: attempt.error }],
    );
  }
  await t.conveyor.pool.query(`INSERT INTO ${schema}.workers (id, hostname, pid, queues, kinds, concurrency) VALUES ($1, 'host-1', 4242, NULL, '{email.send}', 8)`, [WORKER]);
});
afterAll(() => t?.cleanup());

/** The fixture's jobs by state, per queue, for `tenant` (all when null). */
function countsOf(queue: string, tenant: string | null): Record<JobStatus, number> {
  const counts = Object.fromEntries(JOB_STATUSES.map((status) => [status, 0])) as Record<JobStatus, number>;
  for (const job of jobs) if (job.queue === queue && (tenant === null || job.tenant === tenant)) counts[job.status]++;
  return counts;
}

const ready = (job: FixtureJob) => job.status === "queued" || job.status === "retrying";
const ageOf = (job: FixtureJob, now: number) => now - job.createdAt.getTime();

function checkOverview(overview: Overview, tenant: string | null, before: number, after: number): void {
  const mine = (job: FixtureJob) => tenant === null || job.tenant === tenant;
  expect(overview.tenant).toBe(tenant);
  expect(overview.windowMs).toBe(15 * 60_000);
  expect(overview.incomplete).toEqual([]);
  expect(overview.at.getTime()).toBeGreaterThanOrEqual(before - 1_000);

  expect(overview.queues.map((queue) => queue.queue)).toEqual([...QUEUES].sort());
  for (const queue of overview.queues) {
    expect(queue.counts, queue.queue).toEqual(countsOf(queue.queue, tenant));
    expect(Object.values(queue.estimated).every((flag) => !flag), "a small store is counted exactly").toBe(true);
    expect(queue.paused).toBe(false);
    const oldest = jobs.filter((job) => ready(job) && mine(job) && job.queue === queue.queue).sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime())[0]!;
    expect(queue.oldestReadyAgeMs).toBeGreaterThanOrEqual(ageOf(oldest, before) - 1_000);
    expect(queue.oldestReadyAgeMs).toBeLessThanOrEqual(ageOf(oldest, after) + 1_000);
    expect(queue.oldestReadyJob, queue.queue).toMatchObject({ id: oldest.id, queue: queue.queue, kind: oldest.kind, tenant: oldest.tenant });
    expect(queue.oldestReadyJob!.ageMs).toBe(queue.oldestReadyAgeMs);
    const attempts = RECENT.filter((a) => a.agoMs < 15 * 60_000 && a.job.queue === queue.queue && mine(a.job));
    const succeeded = attempts.filter((a) => a.outcome === "succeeded").length;
    const failed = attempts.filter((a) => a.outcome === "failed" || a.outcome === "timeout").length;
    expect(queue.recent, queue.queue).toEqual({ succeeded, failed, failureRate: succeeded + failed === 0 ? null : failed / (succeeded + failed) });
  }

  const oldest = jobs.filter((job) => ready(job) && mine(job)).sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime())[0]!;
  expect(overview.oldestReadyJob).toMatchObject({ id: oldest.id, queue: oldest.queue, kind: oldest.kind, tenant: oldest.tenant });

  const expired = jobs
    .filter((job) => job.status === "running" && job.leaseExpiresAt! < new Date(before) && mine(job))
    .sort((a, b) => a.leaseExpiresAt!.getTime() - b.leaseExpiresAt!.getTime());
  expect(overview.stuck).toMatchObject({ count: expired.length, estimated: false });
  expect(overview.stuck!.jobs.map((job) => job.id)).toEqual(expired.map((job) => job.id));
  expect(overview.stuck!.jobs.every((job) => job.workerId === WORKER && job.expiredMs >= 60_000)).toBe(true);

  const recent = RECENT.filter((a) => a.agoMs < 15 * 60_000 && mine(a.job) && a.outcome !== "cancelled");
  const kinds = [...new Set(recent.map((a) => a.job.kind))].sort();
  expect(overview.kinds.map((kind) => kind.kind)).toEqual(kinds);
  for (const kind of overview.kinds) {
    const mineOfKind = recent.filter((a) => a.job.kind === kind.kind);
    expect(kind.succeeded + kind.failed).toBe(mineOfKind.length);
  }
  const failures = recent.filter((a) => a.error !== null);
  const byMessage = new Map<string, typeof failures>();
  for (const a of failures) byMessage.set(a.error!, [...(byMessage.get(a.error!) ?? []), a]);
  // Most frequent first; between equals, the one seen last first.
  const lastAgo = (list: typeof failures) => Math.min(...list.map((a) => a.agoMs));
  expect(overview.topErrors.map((group) => [group.message, group.count, group.kinds])).toEqual(
    [...byMessage.entries()]
      .sort((a, b) => b[1].length - a[1].length || lastAgo(a[1]) - lastAgo(b[1]))
      .map(([message, list]) => [message, list.length, [...new Set(list.map((a) => a.job.kind))].sort()]),
  );
  for (const group of overview.topErrors) expect(group.lastSeenAt.getTime()).toBeLessThanOrEqual(after);

  expect(overview.workers).toEqual([
    expect.objectContaining({ id: WORKER, hostname: "host-1", pid: 4242, queues: null, concurrency: 8, running: jobs.filter((job) => job.status === "running" && mine(job)).length }),
  ]);
}

describe("overview", () => {
  it("reports every part for all tenants", async () => {
    const before = Date.now();
    const overview = await t.conveyor.overview();
    checkOverview(overview, null, before, Date.now());
    expect(overview.topErrors[0]).toMatchObject({ message: "card declined", count: 2 });
    expect(overview.stuck!.count).toBe(3);
  });

  it("reports only one tenant's jobs, attempts and running jobs for a tenant", async () => {
    for (const tenant of ["acme", "globex"]) {
      const before = Date.now();
      checkOverview(await t.conveyor.overview({ tenant }), tenant, before, Date.now());
    }
    const nobody = await t.conveyor.overview({ tenant: "nobody" });
    expect(nobody).toMatchObject({ queues: [], kinds: [], oldestReadyJob: null, stuck: { count: 0, jobs: [] }, topErrors: [] });
    expect(nobody.workers.map((worker) => worker.running)).toEqual([0]);
  });

  it("marks a paused queue", async () => {
    await t.conveyor.queues.pause("billing");
    try {
      const overview = await t.conveyor.overview();
      expect(overview.queues.map((queue) => [queue.queue, queue.paused])).toEqual([["billing", true], ["mail", false], ["reports", false]]);
    } finally {
      await t.conveyor.queues.deleteSettings("billing");
    }
  });
});

describe("a part that does not finish within the time bound", () => {
  let bounded: TestConveyor;
  let locker: pg.Client;
  beforeAll(async () => {
    bounded = await createTestConveyor({ logger: silent, schema: t.schema, searchTimeoutMs: 300 });
    locker = await connectTestClient();
  });
  afterAll(async () => {
    await locker?.end();
    await bounded?.cleanup();
  });

  it("is left out and named in incomplete; the rest is answered", async () => {
    await locker.query("BEGIN");
    await locker.query(`LOCK TABLE ${schema}.job_executions IN ACCESS EXCLUSIVE MODE`);
    let overview: Overview;
    try {
      overview = await bounded.conveyor.overview();
    } finally {
      await locker.query("COMMIT");
    }
    expect(overview.incomplete).toEqual(["recent"]);
    expect(overview.kinds).toEqual([]);
    expect(overview.topErrors).toEqual([]);
    expect(overview.queues.every((queue) => queue.recent === null)).toBe(true);
    expect(overview.queues.map((queue) => queue.counts)).toEqual([...QUEUES].sort().map((queue) => countsOf(queue, null)));
    expect(overview.stuck!.count).toBe(3);
  });
});

describe("per-queue counts on a store larger than the exact-count limit", () => {
  let capped: TestConveyor;
  const deep: FixtureJob[] = fixtureJobs(70, Date.now() - 20 * DAY)
    .filter((job) => job.status === "queued")
    .map((job) => ({ ...job, queue: "deep", idempotencyKey: null, uniqueKey: null }));

  beforeAll(async () => {
    capped = await createTestConveyor({ logger: silent, schema: t.schema, exactCountLimit: 5 });
    await insertFixtureJobs(t.conveyor.pool, schema, deep);
    await t.conveyor.pool.query(`ANALYZE ${schema}.jobs`);
  });
  afterAll(() => capped?.cleanup());

  it("are exact up to the limit and the planner's estimate above it, flagged", async () => {
    expect(deep.length).toBe(10);
    const overview = await capped.conveyor.overview();
    expect(overview.exactCountLimit).toBe(5);
    const byName = new Map(overview.queues.map((queue) => [queue.queue, queue]));
    const queue = byName.get("deep")!;
    expect(queue.estimated.queued).toBe(true);
    // Freshly analyzed, the statistics hold every row of this small table.
    expect(queue.counts.queued).toBe(10);
    expect(queue.estimated.waiting).toBe(false);
    expect(queue.counts.waiting).toBe(0);
    for (const name of QUEUES) {
      const counts = countsOf(name, null);
      const item = byName.get(name)!;
      for (const status of JOB_STATUSES) {
        expect(counts[status]).toBeLessThanOrEqual(5);
        expect([item.counts[status], item.estimated[status]], `${name} ${status}`).toEqual([counts[status], false]);
      }
    }
  });

  it("answer GET /v1/queues and the queue-depth gauge the same way", async () => {
    const overview = capped.conveyor.queueOverview;
    const stats = await overview.queueStats();
    const deepStats = stats.find((queue) => queue.queue === "deep")!;
    expect([deepStats.counts.queued, deepStats.estimated.queued]).toEqual([10, true]);
    expect(deepStats.oldestReadyAgeMs).toBeGreaterThan(19 * DAY);
    const depth = await overview.queueDepth();
    expect(depth).toContainEqual({ queue: "deep", status: "queued", count: 10, estimated: true });
    expect(depth).toContainEqual({ queue: "mail", status: "dead", count: countsOf("mail", null).dead, estimated: false });
    expect(depth.some((row) => row.status === "succeeded" || row.status === "cancelled")).toBe(false);
  });
});
