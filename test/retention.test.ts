/**
 * Retention against a real PostgreSQL: `conveyor.prune()` deletes old
 * succeeded/cancelled jobs and old dead letters (with executions) and nothing
 * else, in batches, safely from many clients at once; workers prune on their
 * own unless told not to; bad options are refused by name.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { freshExecutionIds } from "../packages/core/src/store/execution-ids.js";
import { bindQueries } from "../packages/core/src/store/queries.js";
import { RetentionStore } from "../packages/core/src/store/retention-store.js";
import { pruneInBatches, resolvePruneOptions } from "../packages/core/src/client/prune.js";
import { ConfigError, type Conveyor, createWorkerMetrics, defineJob, ValidationError } from "../packages/core/src/index.js";
import { createTestConveyor, type TestConveyor } from "./helpers/database.js";
import { DAY_MS, makeJobs, surviving } from "./retention-support.js";
import { emptyPayload, silent, sql } from "./worker/support.js";
import { workerTestSignals } from "../packages/core/src/worker/test-signals.js";
import { waitFor } from "./helpers/wait-for.js";
import { asOneJobsTable } from "./helpers/query-plans.js";

const noop = defineJob({ kind: "noop", schema: emptyPayload, maxAttempts: 2, handler: () => {} });

let test: TestConveyor;
let conveyor: Conveyor;
beforeEach(async () => {
  test = await createTestConveyor({ jobs: [noop], logger: silent });
  conveyor = test.conveyor;
});
afterEach(() => test?.cleanup());

const make = (count: number, state: Parameters<typeof makeJobs>[3], ageMs: number) => makeJobs(conveyor, "noop", count, state, ageMs);
const sorted = (...lists: string[][]) => lists.flat().sort();

describe("conveyor.prune", () => {
  it("deletes succeeded and cancelled jobs past the age with their executions, and nothing else", async () => {
    const oldDone = sorted(await make(4, "succeeded", 8 * DAY_MS), await make(3, "cancelled", 8 * DAY_MS));
    const youngDone = sorted(await make(2, "succeeded", 6 * DAY_MS), await make(2, "cancelled", DAY_MS));
    // Unfinished jobs enqueued long ago, and a dead job finished long ago but whose dead letter is young.
    const queued = await make(2, "queued", 60 * DAY_MS);
    const started = sorted(await make(2, "running", 60 * DAY_MS), await make(2, "retrying", 60 * DAY_MS));
    const unfinished = sorted(queued, started);
    const dead = await make(2, "dead", 20 * DAY_MS);
    const kept = sorted(youngDone, unfinished, dead);

    expect(await conveyor.prune()).toEqual({ jobs: 7, deadLetters: 0, flows: 0, events: 0 });

    expect(await surviving(conveyor, "jobs", oldDone)).toEqual([]);
    expect(await surviving(conveyor, "job_executions", oldDone)).toEqual([]);
    expect(await surviving(conveyor, "jobs", kept)).toEqual(kept);
    // Every kept job that had an attempt still has it (queued ones never ran; a running one's is on its row).
    expect(await surviving(conveyor, "job_attempts", kept)).toEqual(sorted(youngDone, started, dead));
    expect(await surviving(conveyor, "dead letters", dead)).toEqual(sorted(dead));
    expect(await conveyor.prune()).toEqual({ jobs: 0, deadLetters: 0, flows: 0, events: 0 });
  });

  it("honours finishedMs by whole days (UTC): a shorter age takes the younger days too, never today's", async () => {
    const twoDays = await make(3, "succeeded", 2 * DAY_MS);
    const oneDay = await make(2, "succeeded", DAY_MS);
    const today = await make(1, "succeeded", 0);
    expect(await conveyor.prune({ finishedMs: DAY_MS })).toEqual({ jobs: 3, deadLetters: 0, flows: 0, events: 0 });
    expect(await surviving(conveyor, "jobs", sorted(twoDays, oneDay, today))).toEqual(sorted(oneDay, today));
    expect(await conveyor.prune({ finishedMs: 0 })).toEqual({ jobs: 2, deadLetters: 0, flows: 0, events: 0 });
    expect(await surviving(conveyor, "jobs", today)).toEqual(today);
  });

  it("drops a day of history whole, with its jobs' records", async () => {
    // Days from ten days ago, as if the schema had been running since then.
    await sql(conveyor, "SELECT {{schema}}.job_history_extend(((now() AT TIME ZONE 'UTC')::date - 10), 7)");
    const old = await make(4, "succeeded", 9 * DAY_MS);
    const young = await make(2, "succeeded", 2 * DAY_MS);
    const partitionOf = async (ids: string[]) =>
      (await sql(conveyor, "SELECT DISTINCT tableoid::regclass::text AS part FROM {{schema}}.jobs WHERE id = ANY($1)", [ids])).rows.map(
        (row) => row.part as string,
      );
    const [oldDay] = await partitionOf(old);
    expect(oldDay).toMatch(/job_history_\d{8}$/);

    expect(await conveyor.prune()).toEqual({ jobs: 4, deadLetters: 0, flows: 0, events: 0 });
    expect(await surviving(conveyor, "jobs", old)).toEqual([]);
    expect(await surviving(conveyor, "job_executions", old)).toEqual([]);
    expect(await surviving(conveyor, "jobs", young)).toEqual(sorted(young));
    // The day went whole: its table is gone.
    expect((await sql(conveyor, "SELECT to_regclass($1) AS t", [oldDay])).rows[0].t).toBeNull();
  });

  it("frees a day's idempotency keys as the day is detached, before it is dropped", async () => {
    await sql(conveyor, "SELECT {{schema}}.job_history_extend(((now() AT TIME ZONE 'UTC')::date - 10), 7)");
    const first = await conveyor.enqueue(noop, {}, { idempotencyKey: "day-old" });
    await sql(
      conveyor,
      `UPDATE {{schema}}.jobs SET status = 'succeeded', attempts = 1, started_at = now() - interval '9 days',
         finished_at = now() - interval '9 days' WHERE id = $1`,
      [first.id],
    );
    // While the job can be read, its key answers with it.
    expect((await conveyor.enqueue(noop, {}, { idempotencyKey: "day-old" })).id).toBe(first.id);
    // A prune that detached the day and stopped before dropping it.
    await sql(conveyor, "SELECT {{schema}}.job_history_detach(now() - interval '7 days', '{}', 1000)");
    expect(await conveyor.getJob(first.id)).toBeNull();
    // Once it cannot, the key is free: a new job, from either path.
    const again = await conveyor.enqueue(noop, {}, { idempotencyKey: "day-old" });
    expect(again.id).not.toBe(first.id);
    const [other] = await conveyor.enqueueMany([{ job: noop, payload: {}, idempotencyKey: "day-old-too" }]);
    expect((await conveyor.enqueueMany([{ job: noop, payload: {}, idempotencyKey: "day-old" }]))[0]!.id).toBe(again.id);
    expect(other).toBeDefined();
    // The prune that comes next drops the day with what is left of it.
    expect(await conveyor.prune()).toEqual({ jobs: 1, deadLetters: 0, flows: 0, events: 0 });
  });

  it("deletes dead letters after their own age, with their dead jobs and executions", async () => {
    const oldDead = await make(3, "dead", 31 * DAY_MS);
    const youngDead = await make(2, "dead", 10 * DAY_MS);

    expect(await conveyor.prune()).toEqual({ jobs: 0, deadLetters: 3, flows: 0, events: 0 });
    for (const table of ["jobs", "job_executions", "dead letters"] as const) {
      expect(await surviving(conveyor, table, oldDead), table).toEqual([]);
      expect(await surviving(conveyor, table, youngDead), table).toEqual(sorted(youngDead));
    }
    expect(await conveyor.prune({ deadLetterMs: 5 * DAY_MS })).toEqual({ jobs: 0, deadLetters: 2, flows: 0, events: 0 });
    expect(await surviving(conveyor, "jobs", youngDead)).toEqual([]);
  });

  it("deletes old flows once their jobs are all gone, and keeps one with any job left", async () => {
    const emptied = await conveyor.flows.enqueue({ jobs: { a: { job: noop, payload: {} }, b: { job: noop, payload: {}, dependsOn: ["a"] } } });
    const partly = await conveyor.flows.enqueue({ jobs: { c: { job: noop, payload: {} }, d: { job: noop, payload: {} } } });
    const finished = [emptied.jobs.a!.id, emptied.jobs.b!.id, partly.jobs.c!.id];
    await sql(
      conveyor,
      `UPDATE {{schema}}.jobs SET status = 'succeeded', finished_at = now() - interval '8 days' WHERE id = ANY($1::uuid[])`,
      [finished],
    );
    await sql(conveyor, "UPDATE {{schema}}.flows SET created_at = now() - interval '8 days'");
    expect(await conveyor.prune()).toEqual({ jobs: 3, deadLetters: 0, flows: 1, events: 0 });
    expect(await conveyor.flows.get(emptied.id)).toBeNull();
    expect((await conveyor.flows.get(partly.id))!.jobs.map((j) => j.node)).toEqual(["d"]);
  });

  it("deletes in batches of batchSize, one statement each, until a batch comes back short", async () => {
    const finished = await make(25, "succeeded", 8 * DAY_MS);
    const dead = await make(8, "dead", 40 * DAY_MS);
    const store = new CountingRetentionStore(conveyor);

    const result = await pruneInBatches(store, resolvePruneOptions({ batchSize: 4 }));

    expect(result).toEqual({ jobs: 25, deadLetters: 8, flows: 0, events: 0 });
    expect(store.finishedBatches).toEqual([4, 4, 4, 4, 4, 4, 1]);
    expect(store.deadLetterBatches).toEqual([4, 4, 0]);
    expect(await surviving(conveyor, "jobs", sorted(finished, dead))).toEqual([]);
  });

  it("stops between batches once its signal is aborted", async () => {
    await make(12, "succeeded", 8 * DAY_MS);
    const store = new CountingRetentionStore(conveyor);
    const abort = new AbortController();
    store.afterFinishedBatch = () => abort.abort();

    expect(await pruneInBatches(store, resolvePruneOptions({ batchSize: 5 }), [], abort.signal)).toEqual({ jobs: 5, deadLetters: 0, flows: 0, events: 0 });
    expect(store.finishedBatches).toEqual([5]);
    expect(store.deadLetterBatches).toEqual([]);
  });

  it("deletes each row once when several clients prune the same rows at once", async () => {
    const finished = await make(300, "succeeded", 8 * DAY_MS);
    const dead = await make(40, "dead", 40 * DAY_MS);
    const others = await Promise.all([1, 2, 3].map(() => createTestConveyor({ schema: test.schema, jobs: [noop], logger: silent }, { migrate: false })));
    try {
      const clients = [conveyor, ...others.map((other) => other.conveyor)];
      const results = await Promise.all(clients.map((client) => client.prune({ batchSize: 25 })));
      expect(results.reduce((sum, r) => sum + r.jobs, 0)).toBe(300);
      expect(results.reduce((sum, r) => sum + r.deadLetters, 0)).toBe(40);
      expect(await surviving(conveyor, "jobs", sorted(finished, dead))).toEqual([]);
    } finally {
      // These share the schema, which createTestConveyor leaves to its owner.
      await Promise.all(others.map((other) => other.cleanup()));
    }
  });

  it("skips a row another transaction holds instead of waiting for it", async () => {
    const [held, ...rest] = await make(5, "succeeded", 8 * DAY_MS);
    const other = await conveyor.pool.connect();
    try {
      await other.query("BEGIN");
      await other.query(`SELECT 1 FROM "${test.schema}".jobs WHERE id = $1 FOR UPDATE`, [held]);
      // Returns while the lock is held: a prune that waited would never get here.
      expect(await conveyor.prune()).toEqual({ jobs: 4, deadLetters: 0, flows: 0, events: 0 });
      expect(await surviving(conveyor, "jobs", sorted(rest))).toEqual([]);
      await other.query("COMMIT");
    } finally {
      other.release();
    }
    expect(await conveyor.prune()).toEqual({ jobs: 1, deadLetters: 0, flows: 0, events: 0 });
  });

  it("refuses bad options, naming the field", async () => {
    const refused = async (options: Parameters<Conveyor["prune"]>[0], field: string) => {
      const error = await conveyor.prune(options).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as Error).message).toMatch(new RegExp(`^${field} must be`));
      expect((error as ValidationError).issues[0]?.path).toBe(field);
    };
    await refused({ finishedMs: -1 }, "finishedMs");
    await refused({ finishedMs: Number.NaN }, "finishedMs");
    await refused({ deadLetterMs: Number.POSITIVE_INFINITY }, "deadLetterMs");
    await refused({ deadLetterMs: "7d" as unknown as number }, "deadLetterMs");
    await refused({ batchSize: 0 }, "batchSize");
    await refused({ batchSize: 2.5 }, "batchSize");
    await refused({ batchSize: 10_001 }, "batchSize");
  });
});

describe("retention per job kind", () => {
  const HOUR_MS = 60 * 60 * 1000;
  const noisy = defineJob({ kind: "noisy", schema: emptyPayload, maxAttempts: 2, retention: { finishedMs: HOUR_MS }, handler: () => {} });
  const audited = defineJob({
    kind: "audited",
    schema: emptyPayload,
    maxAttempts: 2,
    retention: { finishedMs: 90 * DAY_MS, deadLetterMs: 90 * DAY_MS },
    handler: () => {},
  });

  it("prunes each kind by its own ages, and every other kind by the pruner's, from prune() and from a worker", async () => {
    const kinds = await createTestConveyor({ jobs: [noop, noisy, audited], logger: silent, schema: test.schema });
    try {
      const made = (kind: string, count: number, state: Parameters<typeof makeJobs>[3], ageMs: number) => makeJobs(kinds.conveyor, kind, count, state, ageMs);
      const noisyOld = await made("noisy", 3, "succeeded", 2 * HOUR_MS);
      const noisyYoung = await made("noisy", 2, "cancelled", HOUR_MS / 2);
      const auditedOld = await made("audited", 2, "succeeded", 8 * DAY_MS);
      const auditedDead = await made("audited", 1, "dead", 40 * DAY_MS);
      const plainOld = await made("noop", 2, "succeeded", 8 * DAY_MS);
      const plainDead = await made("noop", 1, "dead", 40 * DAY_MS);
      const plainYoung = await made("noop", 2, "succeeded", 2 * HOUR_MS);

      // The default ages (7 days, 30 days) for noop; an hour for noisy; 90 days for audited.
      expect(await kinds.conveyor.prune()).toEqual({ jobs: 3 + 2, deadLetters: 1, flows: 0, events: 0 });
      expect(await surviving(kinds.conveyor, "jobs", sorted(noisyOld, plainOld, plainDead))).toEqual([]);
      const kept = sorted(noisyYoung, auditedOld, auditedDead, plainYoung);
      expect(await surviving(kinds.conveyor, "jobs", kept)).toEqual(kept);

      // A worker's own ages stand for noop only; noisy and audited keep theirs.
      const noisyLater = await made("noisy", 2, "succeeded", 2 * HOUR_MS);
      const worker = kinds.conveyor.worker({ logger: silent, retention: { intervalMs: 100, finishedMs: 60 * DAY_MS, deadLetterMs: DAY_MS } });
      await worker.start();
      try {
        await waitFor("the worker to prune noisy jobs by their own hour", async () => (await surviving(kinds.conveyor, "jobs", noisyLater)).length === 0, 30_000);
      } finally {
        await worker.stop();
      }
      expect(await surviving(kinds.conveyor, "jobs", sorted(auditedOld, auditedDead, plainYoung))).toEqual(sorted(auditedOld, auditedDead, plainYoung));
    } finally {
      await kinds.cleanup();
    }
  });

  it("refuses a bad retention in defineJob, naming the field", () => {
    const refused = (retention: unknown, pattern: RegExp) =>
      expect(() => defineJob({ kind: "bad", schema: emptyPayload, retention: retention as { finishedMs: number }, handler: () => {} })).toThrow(pattern);
    refused({ finishedMs: -1 }, /job "bad": retention.finishedMs must be a number of ms from 0/);
    refused({ deadLetterMs: Number.NaN }, /job "bad": retention.deadLetterMs must be/);
    refused({ finishedMS: 5 }, /job "bad": retention.finishedMS is not a retention setting/);
    refused("7d", /job "bad": retention must be an object/);
    expect(defineJob({ kind: "fine", schema: emptyPayload, handler: () => {} }).retention).toBeNull();
  });
});

describe("worker retention", () => {
  it("prunes on its own on a short interval, counting what it deleted", async () => {
    const finished = await make(5, "succeeded", 2 * DAY_MS);
    const dead = await make(2, "dead", 3 * DAY_MS);
    const young = await make(2, "succeeded", 60 * 60 * 1000);
    const worker = conveyor.worker({ logger: silent, retention: { intervalMs: 100, finishedMs: DAY_MS, deadLetterMs: DAY_MS }, metrics: await createWorkerMetrics() });
    const pruned = workerTestSignals(worker).pruner!.pruned;
    await worker.start();
    try {
      // Prunes until one deletes nothing: it ran with nothing old left, and left the young jobs alone.
      let result = await pruned.wait();
      while (result.jobs + result.deadLetters > 0) result = await pruned.wait();
    } finally {
      await worker.stop();
    }
    expect(await surviving(conveyor, "jobs", sorted(finished, dead))).toEqual([]);
    expect(await surviving(conveyor, "jobs", young)).toEqual(sorted(young));
    const counter = await worker.metrics!.pruned.get();
    const byReason = Object.fromEntries(counter.values.map((v) => [v.labels.reason, v.value]));
    expect(byReason).toEqual({ finished: 5, dead_letter: 2 });
  });

  it("prunes nothing with retention: false", async () => {
    const finished = await make(5, "succeeded", 400 * DAY_MS);
    const worker = conveyor.worker({ logger: silent, retention: false, pollIntervalMs: 50, metrics: await createWorkerMetrics() });
    expect(worker.options.retention).toBeNull();
    const signals = workerTestSignals(worker);
    // No prune loop at all; a worker with the default retention has one, whose first prune would delete these 400-day-old jobs.
    expect(signals.pruner).toBeNull();
    const pruning = conveyor.worker({ logger: silent });
    expect(workerTestSignals(pruning).pruner).not.toBeNull();
    await pruning.stop();
    await worker.start();
    try {
      await signals.worker.idle.wait(); // running: it has claimed and sleeps until a poll
    } finally {
      await worker.stop();
    }
    expect(await surviving(conveyor, "jobs", finished)).toEqual(sorted(finished));
    expect((await worker.metrics!.pruned.get()).values.reduce((sum, v) => sum + v.value, 0)).toBe(0);
  });

  it("refuses bad retention options, naming the field", () => {
    const refused = (retention: unknown, pattern: RegExp) => {
      expect(() => conveyor.worker({ logger: silent, retention: retention as false })).toThrow(ConfigError);
      expect(() => conveyor.worker({ logger: silent, retention: retention as false })).toThrow(pattern);
    };
    refused({ intervalMs: 0 }, /^worker\.retention\.intervalMs must be/);
    refused({ finishedMs: -5 }, /^worker\.retention\.finishedMs must be/);
    refused({ deadLetterMs: Number.NaN }, /^worker\.retention\.deadLetterMs must be/);
    refused({ batchSize: 0 }, /^worker\.retention\.batchSize must be/);
    refused("7d", /^worker\.retention must be an object or false/);
    refused(true, /^worker\.retention must be an object or false/);
  });
});

describe("plans with many finished jobs", () => {
  /**
   * 100,000 succeeded jobs over the 15 days before today (UTC), 20 that
   * finished just now (today's day of history is small enough for a scan
   * whatever the hour), and 500 ready ones, analysed.
   */
  async function fillWithFinishedJobs(): Promise<void> {
    await sql(
      conveyor,
      `INSERT INTO {{schema}}.jobs (id, tenant, queue, kind, payload, status, attempts, max_attempts, created_at, run_at, started_at, finished_at)
       SELECT {{schema}}.uuid_v7(), 'default', 'q' || (g % 4), 'k' || (g % 10), '{}', 'succeeded', 1, 2, t, t, t, t
       FROM (SELECT g, CASE WHEN g <= 20 THEN now() ELSE date_trunc('day', now(), 'UTC') - (g % 14) * interval '1 day' - g * interval '1 second' END AS t
             FROM generate_series(1, 100000) AS g) AS s`,
    );
    await make(500, "queued", 0);
    await sql(conveyor, `ANALYZE {{schema}}.jobs`);
  }

  /** Every scan node of a plan: its type, relation and index. */
  function scans(plan: PlanNode, out: PlanNode[] = []): PlanNode[] {
    if (plan["Relation Name"]) out.push(plan);
    for (const child of plan.Plans ?? []) scans(child, out);
    return out;
  }

  async function explain(text: string, values: unknown[]): Promise<PlanNode[]> {
    // Conveyor's own pool: the planner settings (random_page_cost) are the ones its statements run with.
    const { rows } = await conveyor.pool.query(`EXPLAIN (FORMAT JSON) ${text}`, values);
    return asOneJobsTable(conveyor.pool, scans(rows[0]["QUERY PLAN"][0].Plan), test.schema);
  }

  it("the claim reads the ready index, never a scan of the jobs table", async () => {
    await fillWithFinishedJobs();
    for (const queues of [null, ["q1"]]) {
      const nodes = await explain(bindQueries(test.schema).jobClaim.text, ["w", 100, ["noop"], queues, 60_000, freshExecutionIds(100, Date.now())]);
      const onJobs = nodes.filter((node) => node["Relation Name"] === "jobs");
      expect(onJobs.filter((node) => node["Node Type"] === "Seq Scan"), JSON.stringify(onJobs)).toEqual([]);
      expect(onJobs.map((node) => node["Index Name"]), JSON.stringify(onJobs)).toEqual(
        expect.arrayContaining([expect.stringMatching(/^jobs_ready(_by_queue)?_idx$/)]),
      );
    }
  });

  it("a prune reads its own index, never a scan of the jobs table", async () => {
    await fillWithFinishedJobs();
    for (const except of [[], ["k1", "k2"]]) {
      const onJobs = (await explain(bindQueries(test.schema).jobPruneFinished.text, [7 * DAY_MS, 1_000, except])).filter((node) => node["Relation Name"] === "jobs");
      expect(onJobs.filter((node) => node["Node Type"] === "Seq Scan"), JSON.stringify(onJobs)).toEqual([]);
      expect(onJobs.map((node) => node["Index Name"])).toContain("jobs_finished_by_kind_idx");
    }
    // A kind with an age of its own: only that kind's rows, through their own index.
    const ofKind = (await explain(bindQueries(test.schema).jobPruneFinishedOfKind.text, [DAY_MS, 1_000, "k1"])).filter((node) => node["Relation Name"] === "jobs");
    expect(ofKind.filter((node) => node["Node Type"] === "Seq Scan"), JSON.stringify(ofKind)).toEqual([]);
    expect(ofKind.map((node) => node["Index Name"])).toContain("jobs_finished_by_kind_idx");
  });
});

interface PlanNode {
  "Node Type": string;
  "Relation Name"?: string;
  "Index Name"?: string;
  Plans?: PlanNode[];
}

/** A real store that records what each statement deleted. */
class CountingRetentionStore extends RetentionStore {
  readonly finishedBatches: number[] = [];
  readonly deadLetterBatches: number[] = [];
  afterFinishedBatch: () => void = () => {};

  constructor(conveyor: Conveyor) {
    super(conveyor.pool, bindQueries(conveyor.options.schema));
  }

  override async jobPruneFinished(olderThanMs: number, limit: number): Promise<number> {
    const deleted = await super.jobPruneFinished(olderThanMs, limit);
    this.finishedBatches.push(deleted);
    this.afterFinishedBatch();
    return deleted;
  }

  override async deadLetterPrune(olderThanMs: number, limit: number): Promise<number> {
    const deleted = await super.deadLetterPrune(olderThanMs, limit);
    this.deadLetterBatches.push(deleted);
    return deleted;
  }
}
