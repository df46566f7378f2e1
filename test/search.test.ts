/**
 * Searching and counting jobs through the library: every filter field finds
 * exactly the jobs it should (checked against the same predicate over the
 * stored rows), combinations, paging, bad input refused with nothing
 * changed, the search time bound, and counts exact below the limit and
 * estimated above it.
 */
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SearchTimeoutError, ValidationError } from "../packages/core/src/core/errors.js";
import type { JobFilter } from "../packages/core/src/core/job-filter.js";
import { quoteIdent } from "../packages/core/src/store/db.js";
import { connectTestClient, createTestConveyor, type TestConveyor } from "./helpers/database.js";
import { ERRORS, type FixtureJob, fixtureJobs, idsWhere, insertFixtureJobs } from "./helpers/search-fixture.js";
import { silent } from "./worker/support.js";
import { waitFor } from "./helpers/wait-for.js";

const DAY = 24 * 60 * 60 * 1000;
const START = Date.now() - 10 * DAY;
const jobs = fixtureJobs(42, START);
const at = (index: number) => jobs[index]!.createdAt;

let t: TestConveyor;

beforeAll(async () => {
  t = await createTestConveyor({ logger: silent });
  await insertFixtureJobs(t.conveyor.pool, quoteIdent(t.schema), jobs);
});
afterAll(() => t?.cleanup());

/** Every id the filter lists (one page of up to 1,000), newest first. */
async function listed(filter: JobFilter): Promise<string[]> {
  const page = await t.conveyor.listJobs({ ...filter, limit: 1000 });
  expect(page.nextCursor).toBeNull();
  return page.items.map((job) => job.id);
}

/** Each field alone: the filter, and the predicate it must mean. */
const FIELD_CASES: Array<[string, JobFilter, (job: FixtureJob) => boolean]> = [
  ["tenant", { tenant: "globex" }, (job) => job.tenant === "globex"],
  ["status", { status: "retrying" }, (job) => job.status === "retrying"],
  ["status (a list)", { status: ["dead", "cancelled"] }, (job) => job.status === "dead" || job.status === "cancelled"],
  ["queue", { queue: "billing" }, (job) => job.queue === "billing"],
  ["kind", { kind: "report.build" }, (job) => job.kind === "report.build"],
  ["id (whole)", { id: jobs[17]!.id }, (job) => job.id === jobs[17]!.id],
  ["id (its first 12 digits, dashes left out)", { id: jobs[17]!.id.replace(/-/g, "").slice(0, 12) }, (job) => job.id.replace(/-/g, "").startsWith(jobs[17]!.id.replace(/-/g, "").slice(0, 12))],
  ["idempotencyKey", { idempotencyKey: "idem-8" }, (job) => job.idempotencyKey === "idem-8"],
  ["uniqueKey", { uniqueKey: "unique-9" }, (job) => job.uniqueKey === "unique-9"],
  ["payload (a top-level value)", { payload: { customerId: 3 } }, (job) => job.payload.customerId === 3],
  ["payload (nested, and two keys)", { payload: { plan: "free", address: { region: "eu" } } }, (job) => job.payload.plan === "free" && job.payload.address.region === "eu"],
  ["payload (an array element)", { payload: { tags: ["vip"] } }, (job) => job.payload.tags.includes("vip")],
  ["error (case-insensitive)", { error: "service UNAVAILABLE" }, (job) => job.error === ERRORS[0]],
  ["error (% and _ taken literally)", { error: "30% of budget_x" }, (job) => job.error === ERRORS[1]],
  ["createdAfter", { createdAfter: at(30) }, (job) => job.createdAt >= at(30)],
  ["createdBefore", { createdBefore: at(5) }, (job) => job.createdAt < at(5)],
  ["finishedAfter", { finishedAfter: at(20) }, (job) => job.finishedAt !== null && job.finishedAt >= at(20)],
  ["finishedBefore", { finishedBefore: at(20) }, (job) => job.finishedAt !== null && job.finishedAt < at(20)],
];

describe("one filter field", () => {
  for (const [name, filter, match] of FIELD_CASES) {
    it(`${name}: lists exactly the matching jobs, newest first, and counts them exactly`, async () => {
      const expected = idsWhere(jobs, match);
      expect(expected.length, "the fixture has matches").toBeGreaterThan(0);
      expect(expected.length, "and jobs that do not match").toBeLessThan(jobs.length);
      expect(await listed(filter)).toEqual(expected);
      expect(await t.conveyor.countJobs(filter)).toEqual({ count: expected.length, estimated: false });
    });
  }

  it("an empty filter lists and counts every job", async () => {
    expect(await listed({})).toEqual(idsWhere(jobs, () => true));
    expect(await t.conveyor.countJobs()).toEqual({ count: jobs.length, estimated: false });
  });

  it("a filter nothing matches lists nothing and counts 0", async () => {
    for (const filter of [{ queue: "nowhere" }, { error: "no such text" }, { payload: { customerId: 99 } }, { id: "ffff" }] as JobFilter[]) {
      expect(await listed(filter)).toEqual([]);
      expect(await t.conveyor.countJobs(filter)).toEqual({ count: 0, estimated: false });
    }
  });
});

describe("filters combined", () => {
  const cases: Array<[string, JobFilter, (job: FixtureJob) => boolean]> = [
    ["queue and status", { queue: "mail", status: ["queued", "retrying"] }, (job) => job.queue === "mail" && (job.status === "queued" || job.status === "retrying")],
    ["tenant, kind and a created range", { tenant: "acme", kind: "email.send", createdAfter: at(6), createdBefore: at(36) }, (job) => job.tenant === "acme" && job.kind === "email.send" && job.createdAt >= at(6) && job.createdAt < at(36)],
    ["payload and error", { payload: { plan: "free" }, error: "timeout after" }, (job) => job.payload.plan === "free" && job.error !== null && /timeout after/i.test(job.error)],
    ["status and a finished range", { status: "succeeded", finishedAfter: at(10), finishedBefore: at(40) }, (job) => job.status === "succeeded" && job.finishedAt! >= at(10) && job.finishedAt! < at(40)],
  ];
  for (const [name, filter, match] of cases) {
    it(`${name}: every field must match`, async () => {
      const expected = idsWhere(jobs, match);
      expect(expected.length).toBeGreaterThan(0);
      expect(await listed(filter)).toEqual(expected);
      expect(await t.conveyor.countJobs(filter)).toEqual({ count: expected.length, estimated: false });
    });
  }
});

describe("paging", () => {
  it("walks a filtered search page by page, newest first, each job once", async () => {
    const expected = idsWhere(jobs, (job) => job.tenant === "acme");
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page = await t.conveyor.listJobs({ tenant: "acme", limit: 4, cursor });
      expect(page.items.length).toBeLessThanOrEqual(4);
      expect(page.items.every((job) => job.tenant === "acme")).toBe(true);
      seen.push(...page.items.map((job) => job.id));
      cursor = page.nextCursor;
      pages++;
    } while (cursor !== null);
    expect(seen).toEqual(expected);
    expect(pages).toBe(Math.ceil(expected.length / 4));
  });
});

describe("bad input", () => {
  async function snapshot(): Promise<string> {
    const { rows } = await t.conveyor.pool.query(`SELECT md5(string_agg(j::text, '|' ORDER BY j.id)) AS digest FROM ${quoteIdent(t.schema)}.jobs AS j`);
    return rows[0].digest;
  }

  const cases: Array<[string, unknown, string]> = [
    ["an unknown field", { queues: "mail" }, "queues"],
    ["a status that does not exist", { status: "done" }, "status"],
    ["an empty status list", { status: [] }, "status"],
    ["a date that is not a Date", { createdAfter: "2026-01-01" }, "createdAfter"],
    ["an invalid Date", { finishedBefore: new Date("not a date") }, "finishedBefore"],
    ["a payload that is not an object", { payload: [1, 2] }, "payload"],
    ["a payload with a NUL character", { payload: { note: "a\u0000b" } }, "payload"],
    ["a payload with a lone surrogate", { payload: { note: "a\ud800b" } }, "payload"],
    ["a payload key with a lone surrogate", { payload: { ["\udc00"]: 1 } }, "payload"],
    ["a kind with a lone surrogate", { kind: "k\udfff" }, "kind"],
    ["an id prefix of 3 digits", { id: "01a" }, "id"],
    ["an id that is not hexadecimal", { id: "zzzz-1234" }, "id"],
    ["an empty queue", { queue: "" }, "queue"],
    ["error text with a control character", { error: "a\nb" }, "error"],
  ];
  for (const [name, filter, path] of cases) {
    it(`refuses ${name}, naming the field, and changes nothing`, async () => {
      const before = await snapshot();
      for (const read of [() => t.conveyor.listJobs(filter as JobFilter), () => t.conveyor.countJobs(filter as JobFilter)]) {
        const error = await read().then(
          () => null,
          (e: unknown) => e,
        );
        expect(error).toBeInstanceOf(ValidationError);
        expect((error as ValidationError).issues[0]?.path).toBe(path);
        expect((error as ValidationError).message).toMatch(new RegExp(`^${path} `));
      }
      expect(await snapshot()).toBe(before);
    });
  }
});

describe("the search time bound", () => {
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

  /** Hold a lock that keeps every read of jobs waiting until `release`. */
  async function lockJobs(): Promise<() => Promise<void>> {
    await locker.query("BEGIN");
    await locker.query(`LOCK TABLE ${quoteIdent(t.schema)}.jobs IN ACCESS EXCLUSIVE MODE`);
    return async () => {
      await locker.query("COMMIT");
    };
  }

  it("stops a search that runs past it with SearchTimeoutError, whose message says how to narrow it", async () => {
    const release = await lockJobs();
    try {
      const started = Date.now();
      const error = await bounded.conveyor.listJobs({ error: "budget" }).then(
        () => null,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(SearchTimeoutError);
      expect((error as SearchTimeoutError).code).toBe("SEARCH_TIMEOUT");
      expect((error as SearchTimeoutError).timeoutMs).toBe(300);
      expect((error as Error).message).toBe(
        "the search did not finish within 300 ms (searchTimeoutMs): narrow it by queue, kind, status or a time range (createdAfter, createdBefore)",
      );
      expect(Date.now() - started).toBeLessThan(5_000);
    } finally {
      await release();
    }
    // The connection it ran on is fine: the next search answers.
    expect((await bounded.conveyor.listJobs({ error: "budget", limit: 1000 })).items.length).toBe(idsWhere(jobs, (job) => /budget/i.test(job.error ?? "")).length);
  });

  it("makes a count that runs past it answer the planner's estimate instead", async () => {
    const release = await lockJobs();
    const counting = bounded.conveyor.countJobs({ queue: "mail" });
    try {
      // The capped count gave up; the estimate waits on the same lock now. (Asked on
      // another connection: within the locker's transaction the view would not change.)
      await waitFor("the estimate to start", async () => {
        const { rows } = await t.conveyor.pool.query(
          "SELECT 1 FROM pg_stat_activity WHERE query LIKE 'EXPLAIN (FORMAT JSON)%' AND strpos(query, $1) > 0 AND wait_event_type = 'Lock'",
          [quoteIdent(t.schema)],
        );
        return rows.length > 0;
      });
    } finally {
      await release();
    }
    const count = await counting;
    expect(count.estimated).toBe(true);
    expect(count.count).toBeGreaterThanOrEqual(1);
  });

  it("is refused with a ConfigError when it is not below the pool's query timeout", async () => {
    const { Conveyor } = await import("../packages/core/src/conveyor.js");
    expect(() => new Conveyor({ connectionString: "postgres://x@localhost/x", searchTimeoutMs: 60_000 })).toThrow(
      "searchTimeoutMs (60000) must be between 1 and queryTimeoutMs (60000), exclusive",
    );
    expect(() => new Conveyor({ connectionString: "postgres://x@localhost/x", searchTimeoutMs: -1 })).toThrow(/^searchTimeoutMs must be an integer >= 0/);
    expect(() => new Conveyor({ connectionString: "postgres://x@localhost/x", exactCountLimit: 0 })).toThrow(/^exactCountLimit must be an integer from 1 to 1000000/);
  });
});

describe("counts above the exact-count limit", () => {
  let capped: TestConveyor;
  beforeAll(async () => {
    capped = await createTestConveyor({ logger: silent, schema: t.schema, exactCountLimit: 5 });
    await capped.conveyor.pool.query(`ANALYZE ${quoteIdent(t.schema)}.jobs`);
  });
  afterAll(() => capped?.cleanup());

  it("are exact up to the limit", async () => {
    const filter: JobFilter = { queue: "mail", status: "dead" };
    const expected = idsWhere(jobs, (job) => job.queue === "mail" && job.status === "dead").length;
    expect(expected).toBeLessThanOrEqual(5);
    expect(await capped.conveyor.countJobs(filter)).toEqual({ count: expected, estimated: false });
  });

  it("are the planner's estimate above it, never below what was counted", async () => {
    // Freshly analyzed, the statistics hold every row of this small table: the estimates are the counts,
    // give or take the one row the planner assumes for each partition that holds none (the days ahead).
    const near = (exact: number) => ({ count: expect.toSatisfy((n: number) => n >= exact && n <= exact + 12), estimated: true });
    expect(await capped.conveyor.countJobs({})).toEqual(near(jobs.length));
    const mail = idsWhere(jobs, (job) => job.queue === "mail").length;
    expect(await capped.conveyor.countJobs({ queue: "mail" })).toEqual(near(mail));
    // A filter the statistics cannot judge (error text) is estimated low, and answered with at least what was counted.
    const budget = await capped.conveyor.countJobs({ error: "e" });
    expect(budget.estimated).toBe(true);
    expect(budget.count).toBeGreaterThanOrEqual(6);
  });
});
