import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defineJob } from "../packages/core/src/index.js";
import { JOB_TABLE } from "../packages/core/src/store/sql/job-moves.js";
import { createTestConveyor, type TestConveyor } from "./helpers/database.js";
import { emptyPayload, sql } from "./worker/support.js";

const step = defineJob({ kind: "moves.step", schema: emptyPayload, handler: () => {} });

/**
 * A job that ends is deleted from jobs_live and inserted into its state's
 * table as the write leaves it, every column named (store/sql/job-moves.ts):
 * the builder's list of columns and their types must be the table's.
 */
let test: TestConveyor;
beforeAll(async () => {
  test = await createTestConveyor({ jobs: [step] });
});
afterAll(() => test?.cleanup());

describe("the columns a move writes", () => {
  it("are every column of jobs, in order, with its type", async () => {
    const { rows } = await test.conveyor.pool.query<{ name: string; type: string }>(
      `SELECT a.attname AS name, format_type(a.atttypid, a.atttypmod) AS type
       FROM pg_attribute AS a WHERE a.attrelid = $1::regclass AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`,
      [`"${test.schema}".jobs`],
    );
    const named = (type: string) => ({ "timestamp with time zone": "timestamptz", "text[]": "text[]" })[type] ?? type;
    expect(rows.map((row) => [row.name, named(row.type)])).toEqual(Object.entries(JOB_TABLE));
  });
});

describe("the schema's triggers", () => {
  it("are at most four, each a safety net or the commit's release", async () => {
    // Triggers made by CREATE TRIGGER (a partition's clone has a parent).
    const { rows } = await test.conveyor.pool.query<{ name: string; table: string }>(
      `SELECT t.tgname AS name, c.relname AS table FROM pg_trigger AS t JOIN pg_class AS c ON c.oid = t.tgrelid
       WHERE c.relnamespace = $1::regnamespace AND NOT t.tgisinternal AND t.tgparentid = 0 ORDER BY 1, 2`,
      [test.schema],
    );
    expect(rows).toEqual([
      { name: "job_ends_release", table: "job_ends" },
      { name: "jobs_deleted", table: "jobs" },
      { name: "jobs_notify_ready", table: "jobs_live" },
      { name: "jobs_status_changed", table: "jobs" },
    ]);
  });
});

describe("a state written by hand", () => {
  it("is followed as a moved job's is: dependents released at commit, waiters told, unique key released", async () => {
    const { conveyor } = test;
    const parent = await conveyor.enqueue(step, {}, { unique: { key: "by-hand" } });
    const child = await conveyor.enqueue(step, {}, { dependsOn: [parent.id] });
    expect((await conveyor.getJob(child.id))?.status).toBe("waiting");
    const waited = conveyor.waitFor(parent.id, { timeoutMs: 20_000 });
    // An UPDATE of status through jobs, as an operator (or a build from before
    // the moves were explicit) would write it: PostgreSQL moves the row.
    await sql(conveyor, "UPDATE {{schema}}.jobs SET status = 'succeeded', finished_at = now() WHERE id = $1", [parent.id]);
    expect((await waited).status).toBe("succeeded");
    expect((await conveyor.getJob(child.id))?.status).toBe("queued");
    const { rows } = await sql(conveyor, "SELECT unique_key FROM {{schema}}.jobs WHERE id = $1", [parent.id]);
    expect(rows).toEqual([{ unique_key: null }]);
    // The key is free: a new job takes it.
    expect((await conveyor.enqueue(step, {}, { unique: { key: "by-hand" } })).id).not.toBe(parent.id);
  });
});
