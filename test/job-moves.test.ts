import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { JOB_TABLE } from "../packages/core/src/store/sql/job-moves.js";
import { createTestConveyor, type TestConveyor } from "./helpers/database.js";

/**
 * A job that ends is deleted from jobs_live and inserted into its state's
 * table as the write leaves it, every column named (store/sql/job-moves.ts):
 * the builder's list of columns and their types must be the table's.
 */
let test: TestConveyor;
beforeAll(async () => {
  test = await createTestConveyor();
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
