/**
 * A dead job is stored once: its row in jobs_dead is its dead letter, and
 * the letter's history is read from its attempts, not kept as a copy. A
 * requeue takes the job out of the queue with its row, and a second death
 * is a new letter with every attempt of both lives.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_QUEUE } from "../packages/core/src/core/defaults.js";
import { type Conveyor, defineJob, type Worker } from "../packages/core/src/index.js";
import { bindQueries } from "../packages/core/src/store/queries.js";
import { deadLetterJson, executionJson } from "../packages/core/src/wire/serialize.js";
import { createTestConveyor } from "./helpers/database.js";
import { type PlanNode, scans } from "./helpers/query-plans.js";
import { silent, sql } from "./worker/support.js";
import { z } from "zod";

const DAY_MS = 24 * 60 * 60 * 1000;

const doomed = defineJob({
  kind: "doomed",
  schema: z.object({ marker: z.string() }),
  maxAttempts: 3,
  backoff: { baseMs: 10, capMs: 10, jitter: 0 },
  handler: () => {
    throw new Error("never works");
  },
});

describe("a dead job", () => {
  let conveyor: Conveyor;
  let cleanup: () => Promise<void>;
  let schema: string;
  let worker: Worker;
  beforeAll(async () => {
    ({ conveyor, cleanup, schema } = await createTestConveyor({ jobs: [doomed], logger: silent }));
    worker = conveyor.worker({ queues: [DEFAULT_QUEUE], pollIntervalMs: 20, logger: silent });
    await worker.start();
  });
  afterAll(async () => {
    await worker.stop({ graceMs: 0 });
    await cleanup();
  });

  /** Per plain table of the schema (partitions included, views not), the rows whose text holds `needle`. */
  async function rowsHolding(needle: string): Promise<Record<string, number>> {
    const { rows: tables } = await conveyor.pool.query<{ name: string }>(
      `SELECT c.relname AS name FROM pg_class AS c
       WHERE c.relnamespace = $1::regnamespace AND c.relkind = 'r' ORDER BY c.relname`,
      [schema],
    );
    const found: Record<string, number> = {};
    for (const { name } of tables) {
      const { rows } = await sql(conveyor, `SELECT count(*)::int AS n FROM {{schema}}."${name}" AS t WHERE t::text LIKE '%' || $1 || '%'`, [needle]);
      if (rows[0].n > 0) found[name] = rows[0].n;
    }
    return found;
  }

  async function dies(id: string): Promise<void> {
    const job = await conveyor.waitFor(id, { timeoutMs: 20_000 });
    expect(job.status).toBe("dead");
  }

  it("is stored once, in jobs_dead: no other table holds a copy of it", async () => {
    const marker = randomUUID();
    const { id } = await conveyor.enqueue(doomed, { marker });
    await dies(id);

    // The payload is in one row of one table, and the job's id in that row and its three attempts.
    expect(await rowsHolding(marker)).toEqual({ jobs_dead: 1 });
    expect(await rowsHolding(id)).toEqual({ jobs_dead: 1, job_executions: 3 });
    const { rows } = await sql(conveyor, "SELECT to_regclass($1) AS letters", [`"${schema}".dead_letter_jobs`]);
    expect(rows[0].letters).toBeNull();

    // That row is the dead letter.
    const [letter] = (await conveyor.deadLetters.list({ kind: "doomed" })).items.filter((entry) => entry.jobId === id);
    const { rows: dead } = await sql(conveyor, "SELECT dead_letter_id, dead_reason, finished_at FROM {{schema}}.jobs WHERE id = $1", [id]);
    expect(dead).toEqual([{ dead_letter_id: letter!.id, dead_reason: "attempts_exhausted", finished_at: letter!.deadAt }]);
    expect(letter).toMatchObject({ jobId: id, payload: { marker }, attempts: 3, maxAttempts: 3, reason: "attempts_exhausted" });
  });

  it("shows as history its attempts as they are recorded, in order", async () => {
    const { id } = await conveyor.enqueue(doomed, { marker: randomUUID() });
    await dies(id);
    const [listed] = (await conveyor.deadLetters.list({ kind: "doomed" })).items.filter((entry) => entry.jobId === id);
    const letter = await conveyor.deadLetters.get(listed!.id);
    expect(letter).toEqual(listed);
    const job = await conveyor.getJob(id);
    expect(job!.executions.map((e) => e.attempt)).toEqual([1, 2, 3]);
    expect(deadLetterJson(letter!).history).toEqual(job!.executions.map(executionJson));
    expect(letter!.history.map((h) => [h.attempt, h.outcome, h.error?.message])).toEqual([
      [1, "failed", "never works"],
      [2, "failed", "never works"],
      [3, "failed", "never works"],
    ]);
    expect(letter!.lastError).toMatchObject({ message: "never works" });
  });

  it("leaves the queue with its row when requeued, and dies again as a new letter with both lives' attempts", async () => {
    // A queue of its own, so that the requeued job stays queued while it is looked at.
    const queue = "held";
    const runUntilDead = async (id: string) => {
      const held = conveyor.worker({ queues: [queue], pollIntervalMs: 20, logger: silent });
      await held.start();
      try {
        await dies(id);
      } finally {
        await held.stop({ graceMs: 0 });
      }
    };
    const { id } = await conveyor.enqueue(doomed, { marker: randomUUID() }, { queue });
    await runUntilDead(id);
    const [first] = (await conveyor.deadLetters.list({ queue })).items;
    expect(first!.jobId).toBe(id);

    const requeued = await conveyor.deadLetters.requeue(first!.id);
    expect(requeued).toMatchObject({ id, status: "queued", attempts: 0 });
    const { rows } = await sql(conveyor, "SELECT tableoid::regclass::text AS part, dead_letter_id, dead_reason FROM {{schema}}.jobs WHERE id = $1", [id]);
    expect(rows).toEqual([{ part: expect.stringMatching(/jobs_live$/), dead_letter_id: null, dead_reason: null }]);
    expect(await conveyor.deadLetters.get(first!.id)).toBeNull();
    expect((await conveyor.deadLetters.list({ queue })).items).toEqual([]);
    await expect(conveyor.deadLetters.requeue(first!.id)).rejects.toMatchObject({ code: "NOT_FOUND" });

    await runUntilDead(id);
    const [second] = (await conveyor.deadLetters.list({ queue })).items;
    expect(second!.jobId).toBe(id);
    expect(second!.id).not.toBe(first!.id);
    expect(second!.history.map((h) => h.attempt)).toEqual([1, 2, 3, 1, 2, 3]);
    expect(deadLetterJson(second!).history).toEqual((await conveyor.getJob(id))!.executions.map(executionJson));
  });

  it("leaves the queue when its state is written out of dead by hand", async () => {
    const { id } = await conveyor.enqueue(doomed, { marker: randomUUID() }, { queue: "by-hand" });
    await sql(
      conveyor,
      `UPDATE {{schema}}.jobs SET status = 'dead', finished_at = now(), dead_letter_id = {{schema}}.uuid_v7(), dead_reason = 'permanent_error'
       WHERE id = $1`,
      [id],
    );
    const [letter] = (await conveyor.deadLetters.list({ queue: "by-hand" })).items;
    expect(letter).toMatchObject({ jobId: id, reason: "permanent_error", history: [] });
    await sql(conveyor, "UPDATE {{schema}}.jobs SET status = 'queued', finished_at = NULL WHERE id = $1", [id]);
    const { rows } = await sql(conveyor, "SELECT status, dead_letter_id, dead_reason FROM {{schema}}.jobs WHERE id = $1", [id]);
    expect(rows).toEqual([{ status: "queued", dead_letter_id: null, dead_reason: null }]);
    expect(await conveyor.deadLetters.get(letter!.id)).toBeNull();
  });

  it("is purged with its row and its attempts", async () => {
    const marker = randomUUID();
    const { id } = await conveyor.enqueue(doomed, { marker });
    await dies(id);
    const [letter] = (await conveyor.deadLetters.list({ kind: "doomed" })).items.filter((entry) => entry.jobId === id);
    await conveyor.deadLetters.purge(letter!.id);
    expect(await rowsHolding(id)).toEqual({});
    expect(await conveyor.getJob(id)).toBeNull();
    await expect(conveyor.deadLetters.purge(letter!.id)).rejects.toMatchObject({ code: "NOT_FOUND" });
  });
});

describe("plans with many dead letters", () => {
  let conveyor: Conveyor;
  let cleanup: () => Promise<void>;
  let schema: string;
  beforeAll(async () => {
    ({ conveyor, cleanup, schema } = await createTestConveyor({ logger: silent }));
    // 20,000 dead letters of 20 tenants, dead over the last 60 days; a thousand queued jobs beside them.
    await sql(
      conveyor,
      `INSERT INTO {{schema}}.jobs (id, tenant, queue, kind, payload, status, attempts, max_attempts, started_at, finished_at, dead_letter_id, dead_reason)
       SELECT {{schema}}.uuid_v7(), 'tenant-' || (g % 20), 'q' || (g % 4), 'k' || (g % 10), '{}', 'dead', 1, 1, t, t, {{schema}}.uuid_v7(), 'attempts_exhausted'
       FROM (SELECT g, now() - (g % 60) * interval '1 day' - g * interval '1 second' AS t FROM generate_series(1, 20000) AS g) AS s`,
    );
    await sql(conveyor, `INSERT INTO {{schema}}.jobs (id, tenant, queue, kind, payload, max_attempts)
                         SELECT {{schema}}.uuid_v7(), 'tenant-1', 'q1', 'k1', '{}', 1 FROM generate_series(1, 1000)`);
    await sql(conveyor, "ANALYZE {{schema}}.jobs");
  });
  afterAll(() => cleanup());

  /** The scans of `name`'s plan for `values`, planned for them. */
  async function plan(name: "deadLetterPrune" | "deadLetterList" | "deadLetterGet", values: unknown[]): Promise<PlanNode[]> {
    const { rows } = await conveyor.pool.query(`EXPLAIN (FORMAT JSON) ${bindQueries(schema)[name].text}`, values);
    return scans(rows[0]["QUERY PLAN"][0].Plan);
  }
  const onDeadJobs = (nodes: PlanNode[]) => nodes.filter((node) => node["Relation Name"] === "jobs_dead");
  const indexesOf = (nodes: PlanNode[]) => onDeadJobs(nodes).map((node) => node["Index Name"]);

  it("retention reads the dead letters oldest first through their time's index, never a scan", async () => {
    for (const values of [[30 * DAY_MS, 1_000, null, []], [30 * DAY_MS, 1_000, null, ["k1"]], [30 * DAY_MS, 1_000, "k2", []]]) {
      const nodes = await plan("deadLetterPrune", values);
      expect(onDeadJobs(nodes).filter((node) => node["Node Type"] === "Seq Scan"), JSON.stringify(nodes)).toEqual([]);
      expect(indexesOf(nodes), JSON.stringify(nodes)).toContain("jobs_dead_finished_idx");
      expect(nodes.map((node) => node["Relation Name"])).not.toContain("jobs_live");
    }
  });

  it("a list pages newest first through the letters' ids, a tenant's through its own index; a letter is found by its id", async () => {
    expect(indexesOf(await plan("deadLetterList", [null, null, null, null, 51]))).toEqual(["jobs_dead_letter_id_idx"]);
    expect(indexesOf(await plan("deadLetterList", ["tenant-3", null, null, null, 51]))).toEqual(["jobs_dead_letter_by_tenant_idx"]);
    const { rows } = await sql(conveyor, "SELECT dead_letter_id FROM {{schema}}.jobs_dead LIMIT 1");
    expect(indexesOf(await plan("deadLetterGet", [rows[0].dead_letter_id, null]))).toEqual(["jobs_dead_letter_id_idx"]);
    expect(indexesOf(await plan("deadLetterGet", [rows[0].dead_letter_id, "tenant-3"]))).toEqual(["jobs_dead_letter_id_idx"]);
  });
});
