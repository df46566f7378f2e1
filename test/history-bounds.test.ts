/**
 * The bounds of job_history's partitions are computed from their names
 * (routines/job-history-span.ts), not parsed out of the catalog's text.
 * Here the catalog is the oracle: each partition's bound as PostgreSQL
 * deparses it must be the one the computed bounds spell, for the days
 * job_history_extend makes, for the partitions the move to jobs by state
 * made on a database that held history (everything before its cutoff, and
 * the day after it, which reaches to the day after migration 028 ran), and
 * for the default partition.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { Conveyor } from "../packages/core/src/index.js";
import { createSchemaAsOf, loadMigrations, migrate } from "../packages/core/src/store/migrate.js";
import { createTestConveyor, type TestConveyor } from "./helpers/database.js";
import { DAY_MS } from "./retention-support.js";
import { sql } from "./worker/support.js";

const cleanups: TestConveyor[] = [];
afterEach(async () => {
  await Promise.all(cleanups.splice(0).map((test) => test.cleanup()));
});

interface Partition {
  name: string;
  /** pg_get_expr of its bound: the oracle. */
  actual: string;
  /** The same text, spelt from job_history_span. */
  computed: string;
  /** job_history_bound (by oid) returns job_history_span's bounds. */
  boundAgrees: boolean;
  days: number | null;
}

/** Every partition of job_history, with its bound as the catalog has it and as computed. */
async function partitions(conveyor: Conveyor): Promise<Partition[]> {
  const { rows } = await sql(
    conveyor,
    `SELECT c.relname AS name, pg_get_expr(c.relpartbound, c.oid) AS actual,
            CASE WHEN s.ends_at IS NULL THEN 'DEFAULT'
                 ELSE format('FOR VALUES FROM (%s) TO (%L)', coalesce(quote_literal(s.starts_at), 'MINVALUE'), s.ends_at) END AS computed,
            {{schema}}.job_history_bound(c.oid, 'FROM') IS NOT DISTINCT FROM s.starts_at
              AND {{schema}}.job_history_bound(c.oid, 'TO') IS NOT DISTINCT FROM s.ends_at AS "boundAgrees",
            extract(day FROM s.ends_at - s.starts_at)::int AS days
     FROM pg_inherits AS i JOIN pg_class AS c ON c.oid = i.inhrelid
     LEFT JOIN LATERAL {{schema}}.job_history_span(c.relname) AS s ON true
     WHERE i.inhparent = '{{schema}}.job_history'::regclass
     ORDER BY c.relname`,
  );
  return rows as Partition[];
}

/** `job_history_YYYYMMDD` of today (UTC) plus `offset` days. */
function dayName(offset: number): string {
  return `job_history_${new Date(Date.now() + offset * DAY_MS).toISOString().slice(0, 10).replaceAll("-", "")}`;
}

function expectComputedAsAttached(list: Partition[]): void {
  for (const partition of list) {
    expect(partition.computed, partition.name).toBe(partition.actual);
    expect(partition.boundAgrees, partition.name).toBe(true);
  }
}

describe("computed bounds of history's partitions", () => {
  it("are the attached ones for the days job_history_extend makes and for the default", async () => {
    const test = await createTestConveyor();
    cleanups.push(test);
    // Days from three days ago as well, as a schema running since then has them.
    await sql(test.conveyor, "SELECT {{schema}}.job_history_extend(((now() AT TIME ZONE 'UTC')::date - 3), 7)");
    const list = await partitions(test.conveyor);
    expect(list.map((p) => p.name)).toEqual([...Array.from({ length: 11 }, (_, i) => dayName(i - 3)), "job_history_default"].sort());
    expectComputedAsAttached(list);
    expect(list.filter((p) => p.name !== "job_history_default").map((p) => p.days)).toEqual(Array(11).fill(1));
    // Bounds for a day not made yet are those extend will attach it with.
    const [next] = (await sql(test.conveyor, "SELECT starts_at, ends_at FROM {{schema}}.job_history_span($1)", [dayName(30)])).rows;
    expect(next.starts_at.toISOString()).toBe(`${new Date(Date.now() + 30 * DAY_MS).toISOString().slice(0, 10)}T00:00:00.000Z`);
    expect(next.ends_at.getTime() - next.starts_at.getTime()).toBe(DAY_MS);
    expect((await sql(test.conveyor, "SELECT count(*)::int AS n FROM {{schema}}.job_history_span('job_history_default')")).rows[0].n).toBe(0);
  });

  it("are the attached ones after an upgrade whose copy ran for days, and retention drops by them", async () => {
    const test = await createTestConveyor({}, { migrate: false });
    cleanups.push(test);
    const { conveyor, schema } = test;
    await createSchemaAsOf(conveyor.pool, schema, loadMigrations().filter((m) => m.version <= 27));
    // Migration 027 as if it had run three days ago: its cutoff, the day after, is two days ago.
    await sql(conveyor, "UPDATE {{schema}}.migrations SET applied_at = applied_at - interval '3 days' WHERE version = 27");
    await sql(conveyor, "UPDATE {{schema}}.job_history_copy SET cutoff = cutoff - interval '3 days'");
    const insert = (count: number, finished: string) =>
      sql(
        conveyor,
        `INSERT INTO {{schema}}.jobs (id, tenant, queue, kind, payload, max_attempts, status, attempts, started_at, finished_at)
         SELECT gen_random_uuid(), 'default', 'q', 'k', '{}', 3, 'succeeded', 1, ${finished}, ${finished}
         FROM generate_series(1, ${count})
         RETURNING id`,
      );
    await insert(3, "now() - interval '5 days'"); // before the cutoff
    const since = [...(await insert(2, "now() - interval '1 day'")).rows, ...(await insert(1, "now()")).rows].map((row) => row.id as string);
    await migrate(conveyor.pool, schema);

    const list = await partitions(conveyor);
    expectComputedAsAttached(list);
    const byName = new Map(list.map((p) => [p.name, p]));
    const before = `job_history_before_${dayName(-2).slice("job_history_".length)}`;
    expect(byName.get(before)?.actual).toMatch(/^FOR VALUES FROM \(MINVALUE\) TO /);
    // The day after the cutoff holds what ended since, up to the end of today: three days.
    expect(byName.get(dayName(-2))?.days).toBe(3);
    expect([...byName.keys()]).toEqual([before, dayName(-2), ...Array.from({ length: 7 }, (_, i) => dayName(i + 1)), "job_history_default"].sort());
    const { rows } = await sql(conveyor, "SELECT DISTINCT tableoid::regclass::text AS part FROM {{schema}}.jobs WHERE id = ANY($1)", [since]);
    expect(rows.map((row) => row.part)).toEqual([`${schema}.${dayName(-2)}`]);

    // A day old: the history before the cutoff goes whole; the three days
    // after it end today, so they stay, though their name is two days old.
    expect(await conveyor.prune({ finishedMs: DAY_MS })).toEqual({ jobs: 3, deadLetters: 0, flows: 0, events: 0 });
    const left = (await partitions(conveyor)).map((p) => p.name);
    expect(left).not.toContain(before);
    expect(left).toContain(dayName(-2));
    expect((await sql(conveyor, "SELECT count(*)::int AS n FROM {{schema}}.jobs WHERE id = ANY($1)", [since])).rows[0].n).toBe(3);
  });
});
