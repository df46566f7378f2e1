import { afterAll, describe, expect, it } from "vitest";
import { uuidv7 } from "../packages/core/src/core/ids.js";
import type { Pool, PoolClient } from "../packages/core/src/store/db.js";
import { createSchemaAsOf, loadMigrations, migrate } from "../packages/core/src/store/migrate.js";
import { createTestConveyor, type TestConveyor } from "./helpers/database.js";

/**
 * The history copy ahead of storing jobs by state (migrations 027 and 028)
 * against writers that enqueue, claim and finish jobs as a fleet of the
 * build before 027 does, with ids in any order: every job a writer saw
 * committed is in `jobs` after the cutover, as the writer left it.
 */

const cleanups: TestConveyor[] = [];
afterAll(async () => {
  await Promise.all(cleanups.map((test) => test.cleanup()));
});

const COLUMNS = "id, tenant, queue, kind, payload, max_attempts, status, finished_at, idempotency_key";

/** A schema as the build before 028 left it (027's copy tables and trigger included), on a pool of its own. */
async function schemaBefore028(poolSize: number): Promise<{ pool: Pool; s: string; schema: string }> {
  const test = await createTestConveyor({ poolSize }, { migrate: false });
  cleanups.push(test);
  await createSchemaAsOf(test.conveyor.pool, test.schema, loadMigrations().filter((m) => m.version < 28));
  return { pool: test.conveyor.pool, s: `"${test.schema}"`, schema: test.schema };
}

/** Resolves once some backend waits on a lock while running a statement whose text holds `fragment`. */
async function untilWaiting(pool: Pool, fragment: string, done?: () => boolean): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (done?.()) return;
    const { rows } = await pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND position($1 IN query) > 0`,
      [fragment],
    );
    if ((rows[0]?.n ?? 0) > 0) return;
    if (Date.now() > deadline) throw new Error(`nothing waited on a lock running "${fragment}"`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe("the history copy against concurrent writers", () => {
  it("copies a job inserted while a batch is open, with an id the batch passes, and ended before the batch commits", async () => {
    const { pool, s, schema } = await schemaBefore028(4);
    await pool.query(
      `INSERT INTO ${s}.jobs (${COLUMNS})
       SELECT gen_random_uuid(), 'default', 'q', 'k', '{}', 3, 'succeeded', now() - interval '1 hour',
              CASE WHEN n = 1 THEN 'held' END
       FROM generate_series(1, 1000) AS n`,
    );
    // The batch copies every key into job_keys; a key inserted and not yet
    // committed holds it there, after it read its jobs and before it moves
    // its cursor.
    const holder = await pool.connect();
    const writer = await pool.connect();
    try {
      await holder.query("BEGIN");
      await holder.query(`INSERT INTO ${s}.job_keys (tenant, idempotency_key, job_id) VALUES ('default', 'held', gen_random_uuid())`);
      const migrating = migrate(pool, schema, { historyCopyBatchSize: 100_000 });
      await untilWaiting(pool, "WITH covered AS");

      // The smallest id there is: below every job the open batch read.
      const id = "00000000-0000-7000-8000-000000000001";
      let wrote = false;
      const writes = (async () => {
        await writer.query(`INSERT INTO ${s}.jobs (${COLUMNS}) VALUES ($1, 'default', 'q', 'k', '{}', 3, 'queued', NULL, NULL)`, [id]);
        await writer.query(
          `UPDATE ${s}.jobs SET status = 'running', attempts = 1, started_at = now(),
                  locked_by = 'w', current_execution_id = gen_random_uuid(), lease_expires_at = now() + interval '1 hour'
           WHERE id = $1`,
          [id],
        );
        await writer.query(
          `UPDATE ${s}.jobs SET status = 'succeeded', finished_at = now(), locked_by = NULL, current_execution_id = NULL, lease_expires_at = NULL
           WHERE id = $1`,
          [id],
        );
        wrote = true;
      })();
      // Either the writes waited for the batch, or they all went through while it was open.
      await untilWaiting(pool, `${s}.jobs`, () => wrote);
      await holder.query("ROLLBACK");
      await writes;
      await migrating;

      const { rows } = await pool.query<{ status: string; attempts: number }>(`SELECT status, attempts FROM ${s}.jobs WHERE id = $1`, [id]);
      expect(rows).toEqual([{ status: "succeeded", attempts: 1 }]);
      expect((await pool.query(`SELECT count(*)::int AS n FROM ${s}.jobs`)).rows[0].n).toBe(1001);
    } finally {
      await holder.query("ROLLBACK").catch(() => {});
      holder.release();
      writer.release();
    }
  });

  for (const order of ["random", "time-ordered"] as const) {
    it(`loses no acknowledged job while producers and workers run through the upgrade (${order} ids)`, async () => {
      const { pool, s, schema } = await schemaBefore028(10);
      const newId = (ageMs: number): string => (order === "random" ? crypto.randomUUID() : uuidv7(Date.now() - ageMs));
      // 20,000 finished jobs over the last two days and 3,000 queued.
      const day = 24 * 60 * 60 * 1000;
      const ages = Array.from({ length: 20_000 }, (_, n) => (n * 2 * day) / 20_000);
      await pool.query(
        `INSERT INTO ${s}.jobs (${COLUMNS})
         SELECT id, 'default', 'q', 'k', '{}', 3, 'succeeded', now() - age * interval '1 millisecond', NULL
         FROM unnest($1::uuid[], $2::float8[]) AS t(id, age)`,
        [ages.map((age) => newId(age)), ages],
      );
      await pool.query(
        `INSERT INTO ${s}.jobs (${COLUMNS})
         SELECT id, 'default', 'q', 'k', '{}', 3, 'queued', NULL, NULL FROM unnest($1::uuid[]) AS id`,
        [Array.from({ length: 3_000 }, () => newId(day))],
      );

      // What each writer saw committed: the jobs it enqueued, and those it finished.
      const enqueued = new Set<string>();
      // Enqueued and not yet claimed, newest last: workers take these first,
      // as a worker woken by the enqueue's notification would.
      const fresh: string[] = [];
      const finished = new Set<string>();
      let running = true;
      let duringCopy = 0;
      const copying = async (client: PoolClient): Promise<boolean> =>
        (await client.query(`SELECT to_regclass('${s}.job_history_copy') IS NOT NULL AS c`)).rows[0].c as boolean;
      const loop = async (step: (client: PoolClient) => Promise<void>): Promise<void> => {
        const client = await pool.connect();
        try {
          while (running) {
            const during = await copying(client);
            await step(client);
            if (during) duringCopy += 1;
          }
        } finally {
          client.release();
        }
      };
      const producer = (client: PoolClient) =>
        (async () => {
          const id = newId(0);
          await client.query(`INSERT INTO ${s}.jobs (${COLUMNS}) VALUES ($1, 'default', 'q', 'k', '{}', 3, 'queued', NULL, NULL)`, [id]);
          enqueued.add(id);
          fresh.push(id);
        })();
      const worker = (client: PoolClient) =>
        (async () => {
          // The old build's claim, then its completion, each a transaction of its own.
          const next = fresh.pop();
          const { rows } = await client.query<{ id: string }>(
            `UPDATE ${s}.jobs SET status = 'running', attempts = attempts + 1, started_at = now(),
                 locked_by = 'w', current_execution_id = gen_random_uuid(), lease_expires_at = now() + interval '1 hour'
             WHERE id = (SELECT id FROM ${s}.jobs WHERE status = 'queued' AND ($1::uuid IS NULL OR id = $1)
                         ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
             RETURNING id`,
            [next ?? null],
          );
          const id = rows[0]?.id;
          if (!id) return;
          await client.query(`UPDATE ${s}.jobs SET status = 'succeeded', finished_at = now(), locked_by = NULL, current_execution_id = NULL, lease_expires_at = NULL
             WHERE id = $1 AND status = 'running'`, [id]);
          finished.add(id);
        })();
      const writers = [loop(producer), loop(producer), loop(worker), loop(worker), loop(worker)];

      try {
        await migrate(pool, schema, { historyCopyBatchSize: 2_000 });
      } finally {
        running = false;
        await Promise.all(writers);
      }
      expect(duringCopy, "writes made while the history was being copied").toBeGreaterThan(50);
      expect(finished.size).toBeGreaterThan(0);

      const found = async (ids: Set<string>) =>
        (await pool.query<{ id: string; status: string }>(`SELECT id, status FROM ${s}.jobs WHERE id = ANY($1::uuid[])`, [[...ids]])).rows;
      const enqueuedFound = await found(enqueued);
      expect(enqueuedFound.length, "enqueued jobs after the cutover").toBe(enqueued.size);
      const finishedFound = await found(finished);
      expect(finishedFound.filter((row) => row.status === "succeeded").length, "finished jobs after the cutover, succeeded").toBe(finished.size);
      const { rows } = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${s}.jobs`);
      expect(rows[0]!.n).toBe(23_000 + enqueued.size);
    }, 120_000);
  }
});
