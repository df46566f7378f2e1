import { afterAll, describe, expect, it } from "vitest";
import { createSchemaAsOf, loadMigrations, migrate } from "../packages/core/src/store/migrate.js";
import { createTestConveyor, type TestConveyor } from "./helpers/database.js";

/**
 * Storing jobs by state (migrations 027 and 028) on a schema that already
 * holds jobs in one table: the history is copied ahead in batches while
 * workers write, and the cutover copies what changed since. A writer
 * changes jobs all through the copy, in every way a worker, a prune or an
 * operator can, and applies each change to a shadow table in the same
 * transaction; afterwards `jobs` must hold exactly the shadow's rows, each
 * in its state's partition, and job_keys every idempotency key.
 */

const cleanups: TestConveyor[] = [];
afterAll(async () => {
  await Promise.all(cleanups.map((test) => test.cleanup()));
});

const HISTORY = 20_000;

describe("storing jobs by state on a schema that holds jobs", () => {
  it("copies history ahead while jobs are written, and ends with every job as it is, in its state's partition", async () => {
    const test = await createTestConveyor({ poolSize: 6 }, { migrate: false });
    cleanups.push(test);
    const pool = test.conveyor.pool;
    const s = `"${test.schema}"`;
    const q = async <T = Record<string, unknown>>(text: string, values: unknown[] = []) => (await pool.query(text, values)).rows as T[];

    // The schema as the build before 027 left it.
    await createSchemaAsOf(pool, test.schema, loadMigrations().filter((m) => m.version < 27));

    const columns = "id, tenant, queue, kind, payload, max_attempts, status, finished_at, idempotency_key, attempts, locked_by, current_execution_id, lease_expires_at, started_at";
    // History over the last three days, with a key on every third job; and
    // two that ended past tomorrow (a clock far off), outside every day.
    await q(
      `INSERT INTO ${s}.jobs (${columns})
       SELECT gen_random_uuid(), 'default', 'q', 'k', jsonb_build_object('n', n), 3,
              CASE WHEN n % 10 = 0 THEN 'cancelled' ELSE 'succeeded' END,
              now() - (n % 4320) * interval '1 minute',
              CASE WHEN n % 3 = 0 THEN 'key-' || n END, 0, NULL, NULL, NULL, NULL
       FROM generate_series(1, $1) AS n`,
      [HISTORY],
    );
    await q(
      `INSERT INTO ${s}.jobs (${columns})
       SELECT gen_random_uuid(), 'default', 'q', 'k', '{}', 3, 'succeeded', now() + interval '3 days', NULL, 0, NULL, NULL, NULL, NULL
       FROM generate_series(1, 2)`,
    );
    // The backlog: queued, waiting, sleeping, running and dead jobs.
    await q(
      `INSERT INTO ${s}.jobs (${columns})
       SELECT gen_random_uuid(), 'default', 'q', 'k', '{}', 3,
              (ARRAY['queued', 'waiting', 'sleeping', 'running', 'dead'])[1 + n % 5],
              CASE WHEN n % 5 = 4 THEN now() END,
              CASE WHEN n % 2 = 0 THEN 'live-' || n END,
              CASE WHEN n % 5 = 3 THEN 1 ELSE 0 END,
              CASE WHEN n % 5 = 3 THEN 'w' END, CASE WHEN n % 5 = 3 THEN gen_random_uuid() END,
              CASE WHEN n % 5 = 3 THEN now() + interval '1 hour' END, CASE WHEN n % 5 = 3 THEN now() END
       FROM generate_series(1, 2000) AS n`,
    );
    // Defaults included: a row inserted into both in one transaction gets the same now().
    await q(`CREATE TABLE ${s}.shadow (LIKE ${s}.jobs INCLUDING DEFAULTS)`);
    await q(`INSERT INTO ${s}.shadow SELECT * FROM ${s}.jobs`);
    await q(`ALTER TABLE ${s}.shadow ADD PRIMARY KEY (id)`);

    // The writer: one change at a time, to jobs and shadow in one transaction.
    const changes = [
      // a finished job requeued (a rerun)
      `UPDATE %T SET status = 'queued', finished_at = NULL WHERE id = (SELECT id FROM ${s}.shadow WHERE status IN ('succeeded', 'cancelled') AND finished_at < now() ORDER BY random() LIMIT 1)`,
      // a queued job succeeds
      `UPDATE %T SET status = 'succeeded', finished_at = now(), result = '{"ok": true}' WHERE id = (SELECT id FROM ${s}.shadow WHERE status = 'queued' ORDER BY random() LIMIT 1)`,
      // a finished job deleted (a prune)
      `DELETE FROM %T WHERE id = (SELECT id FROM ${s}.shadow WHERE status IN ('succeeded', 'cancelled') ORDER BY random() LIMIT 1)`,
      // a live job cancelled
      `UPDATE %T SET status = 'cancelled', finished_at = now() WHERE id = (SELECT id FROM ${s}.shadow WHERE status IN ('waiting', 'sleeping') ORDER BY random() LIMIT 1)`,
      // a new job with a key, its id anywhere in the order (before the copy's cursor or past it)
      `INSERT INTO %T (${columns}) VALUES ('$ID', 'default', 'q', 'k', '{}', 3, 'queued', NULL, 'new-$ID', 0, NULL, NULL, NULL, NULL)`,
    ];
    let migrating = true;
    let duringCopy = 0;
    let made = 0;
    let sawCopy = false;
    const writer = (async () => {
      const client = await pool.connect();
      try {
        for (let n = 0; migrating; n++) {
          const id = crypto.randomUUID();
          const change = changes[n % changes.length]!.replaceAll("$ID", id);
          try {
            await client.query("BEGIN");
            // Held to the commit, so the cutover waits for this change or
            // comes before it; once the copy is over the writer stops, as
            // the jobs of the new layout are written by Conveyor's own
            // statements (keys included), not by hand.
            await client.query(`LOCK TABLE ${s}.jobs IN ROW EXCLUSIVE MODE`);
            const [copying] = (await client.query(`SELECT to_regclass('${s}.job_history_copy') IS NOT NULL AS copying`)).rows;
            if (copying?.copying) sawCopy = true;
            else if (sawCopy) {
              await client.query("ROLLBACK");
              break;
            }
            // Pick the target once, then change that row in both tables.
            const target = change.includes("ORDER BY random()")
              ? (await client.query(change.replace(/^.*WHERE id = \((.*)\)$/, "$1"))).rows[0]?.id
              : undefined;
            if (change.includes("ORDER BY random()") && !target) {
              await client.query("ROLLBACK");
              continue;
            }
            const fixed = target ? change.replace(/WHERE id = \(.*\)$/, `WHERE id = '${target}'`) : change;
            const a = await client.query(fixed.replace("%T", `${s}.jobs`));
            const b = await client.query(fixed.replace("%T", `${s}.shadow`));
            expect(a.rowCount).toBe(b.rowCount);
            await client.query("COMMIT");
            made += 1;
            if (copying?.copying) duringCopy += 1;
          } catch (error) {
            await client.query("ROLLBACK").catch(() => {});
            throw error;
          }
        }
      } finally {
        client.release();
      }
    })();

    const result = await migrate(pool, test.schema, { historyCopyBatchSize: 200 });
    migrating = false;
    await writer;
    expect(result.applied).toEqual(loadMigrations().filter((m) => m.version >= 27).map((m) => m.version));
    expect(duringCopy, "changes made while the history was being copied").toBeGreaterThan(20);
    expect(made).toBeGreaterThan(duringCopy);

    // Compared on the columns the jobs had before 027 (later migrations add more).
    const [shadowed] = await q<{ list: string }>(
      `SELECT string_agg(quote_ident(attname), ', ' ORDER BY attnum) AS list FROM pg_attribute
       WHERE attrelid = '${s}.shadow'::regclass AND attnum > 0 AND NOT attisdropped`,
    );
    const old = shadowed!.list;
    const [diff] = await q<{ missing: number; extra: number; jobs: number }>(
      `SELECT (SELECT count(*)::int FROM (SELECT ${old} FROM ${s}.shadow EXCEPT ALL SELECT ${old} FROM ${s}.jobs) AS d) AS missing,
              (SELECT count(*)::int FROM (SELECT ${old} FROM ${s}.jobs EXCEPT ALL SELECT ${old} FROM ${s}.shadow) AS d) AS extra,
              (SELECT count(*)::int FROM ${s}.jobs) AS jobs`,
    );
    expect({ missing: diff!.missing, extra: diff!.extra }).toEqual({ missing: 0, extra: 0 });
    const [shadowCount] = await q<{ n: number }>(`SELECT count(*)::int AS n FROM ${s}.shadow`);
    expect(diff!.jobs).toBe(shadowCount!.n);

    // Each job in its state's partition; the history before the cutoff in one partition, attached whole.
    const placed = await q<{ partition: string; status: string; n: number }>(
      `SELECT CASE WHEN tableoid::regclass::text LIKE '%job_history_before_%' THEN 'before'
                   ELSE regexp_replace(tableoid::regclass::text, '^.*\\.', '') END AS partition,
              status, count(*)::int AS n
       FROM ${s}.jobs GROUP BY 1, 2 ORDER BY 1, 2`,
    );
    const expected = await q<{ partition: string; status: string; n: number }>(
      `SELECT CASE WHEN status IN ('waiting', 'queued', 'running', 'retrying', 'sleeping') THEN 'jobs_live'
                   WHEN status = 'dead' THEN 'jobs_dead'
                   WHEN finished_at < ((now() AT TIME ZONE 'UTC')::date + 1)::timestamp AT TIME ZONE 'UTC' THEN 'before'
                   ELSE 'job_history_default' END AS partition,
              status, count(*)::int AS n
       FROM ${s}.shadow GROUP BY 1, 2 ORDER BY 1, 2`,
    );
    expect(placed).toEqual(expected);

    const [keys] = await q<{ missing: number; extra: number }>(
      `SELECT (SELECT count(*)::int FROM (SELECT tenant, idempotency_key, id FROM ${s}.shadow WHERE idempotency_key IS NOT NULL
                                         EXCEPT ALL SELECT tenant, idempotency_key, job_id FROM ${s}.job_keys) AS d) AS missing,
              (SELECT count(*)::int FROM (SELECT tenant, idempotency_key, job_id FROM ${s}.job_keys
                                         EXCEPT ALL SELECT tenant, idempotency_key, id FROM ${s}.shadow WHERE idempotency_key IS NOT NULL) AS d) AS extra`,
    );
    expect(keys).toEqual({ missing: 0, extra: 0 });
    const leftovers = await q(
      `SELECT relname FROM pg_class WHERE relnamespace = $1::regnamespace AND relname IN ('job_history_copy', 'job_history_copy_dirty', 'job_history_before')`,
      [test.schema],
    );
    expect(leftovers).toEqual([]);
    expect((await migrate(pool, test.schema)).applied).toEqual([]);
  }, 120_000);
});
