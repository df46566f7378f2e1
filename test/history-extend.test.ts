/**
 * job_history_extend (routines/job-history-extend.ts) under contention:
 * every lock it takes is waited for at most HISTORY_EXTEND_LOCK_TIMEOUT_MS,
 * so another extender's transaction or a long read of the default
 * partition makes a run give up at once, never wait behind them (and make
 * every read of the default partition queue behind it); the days are made
 * by the next run. A day some partition attached by hand covers is left
 * to it.
 */
import type pg from "pg";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { Conveyor } from "../packages/core/src/index.js";
import { connectTestClient, createTestConveyor, type TestConveyor } from "./helpers/database.js";
import { DAY_MS } from "./retention-support.js";
import { sql } from "./worker/support.js";

let test: TestConveyor;
let conveyor: Conveyor;
let other: pg.Client;
beforeEach(async () => {
  test = await createTestConveyor();
  conveyor = test.conveyor;
  other = await connectTestClient();
});
afterEach(async () => {
  await other?.end();
  await test?.cleanup();
});

/** `job_history_YYYYMMDD` of today (UTC) plus `offset` days. */
function dayName(offset: number): string {
  return `job_history_${new Date(Date.now() + offset * DAY_MS).toISOString().slice(0, 10).replaceAll("-", "")}`;
}

/** Drop the day partitions of today + `from` to today + `to`. */
async function dropDays(from: number, to: number): Promise<void> {
  for (let offset = from; offset <= to; offset++) await sql(conveyor, `DROP TABLE {{schema}}.${dayName(offset)}`);
}

async function days(): Promise<string[]> {
  const { rows } = await sql(
    conveyor,
    `SELECT c.relname AS name FROM pg_inherits AS i JOIN pg_class AS c ON c.oid = i.inhrelid
     WHERE i.inhparent = '{{schema}}.job_history'::regclass AND c.relname ~ '^job_history_[0-9]{8}$' ORDER BY 1`,
  );
  return rows.map((row) => row.name as string);
}

const extend = async (): Promise<number> => (await sql(conveyor, "SELECT {{schema}}.job_history_extend(NULL, 7) AS made")).rows[0].made;
const week = () => Array.from({ length: 8 }, (_, i) => dayName(i));

describe("job_history_extend under contention", () => {
  it("leaves the days to an extender whose transaction holds the lock, without waiting for it", async () => {
    await dropDays(1, 7);
    await other.query("BEGIN");
    expect((await other.query(`SELECT "${test.schema}".job_history_extend(NULL, 7) AS made`)).rows[0].made).toBe(7);
    // Returns while the other transaction is open: one that waited would not.
    expect(await extend()).toBe(0);
    await other.query("COMMIT");
    expect(await days()).toEqual(week());
    expect(await extend()).toBe(0);
  });

  it("gives a day up while a read holds the default partition, and makes it on the next run", async () => {
    await dropDays(5, 7);
    await other.query("BEGIN");
    await other.query(`SELECT count(*) FROM "${test.schema}".job_history_default`);
    // Attaching needs the default partition alone; the run ends at the first day instead of queueing behind the read.
    expect(await extend()).toBe(0);
    expect(await days()).toEqual(week().slice(0, 5));
    await other.query("COMMIT");
    expect(await extend()).toBe(3);
    expect(await days()).toEqual(week());
  });

  it("leaves a day a partition attached by hand covers to it, and makes the others", async () => {
    await dropDays(3, 7);
    const start = (offset: number) => new Date(Date.now() + offset * DAY_MS).toISOString().slice(0, 10);
    await sql(conveyor, "CREATE TABLE {{schema}}.history_by_hand (LIKE {{schema}}.job_history INCLUDING DEFAULTS INCLUDING CONSTRAINTS)");
    await sql(conveyor, `ALTER TABLE {{schema}}.job_history ATTACH PARTITION {{schema}}.history_by_hand FOR VALUES FROM ('${start(4)} 00:00+00') TO ('${start(5)} 00:00+00')`);
    expect(await extend()).toBe(4);
    expect(await days()).toEqual(week().filter((name) => name !== dayName(4)));
  });
});
