import { AssertionError } from "node:assert";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { defineJob } from "../../packages/core/src/core/define-job.js";
import { PermanentError } from "../../packages/core/src/core/errors.js";
import { createPool, quoteIdent } from "../../packages/core/src/store/db.js";
import { createMigratedSchema, migrate } from "../../packages/core/src/store/migrate.js";
import { createTestConveyor, type TestConveyor } from "../../packages/core/src/testing/index.js";
import { testDatabaseUrl, uniqueSchemaName } from "../helpers/database.js";

const calls: string[] = [];

const welcome = defineJob({
  kind: "user.welcome",
  schema: z.object({ userId: z.number(), flaky: z.number().default(0) }),
  backoff: { baseMs: 60_000, capMs: 60_000, jitter: 0 }, // a minute: only skipped delays let a drain see the retry
  maxAttempts: 3,
  async handler({ payload, job }) {
    calls.push(`welcome ${payload.userId} attempt ${job.attempt}`);
    if (job.attempt <= payload.flaky) throw new Error(`flaky ${job.attempt}`);
    return { welcomed: payload.userId };
  },
});

const signUp = defineJob({
  kind: "user.signup",
  schema: z.object({ userId: z.number(), email: z.string() }),
  // A job that enqueues another: drain runs both.
  handler: async ({ payload }) => {
    await test.conveyor.enqueue(welcome, { userId: payload.userId });
  },
});

const doomed = defineJob({ kind: "doomed", schema: z.object({}), handler: () => Promise.reject(new PermanentError("no")) });

let test: TestConveyor;
beforeAll(async () => {
  test = await createTestConveyor({ jobs: [welcome, signUp, doomed], connectionString: testDatabaseUrl() });
});
afterAll(() => test.close());

describe("createTestConveyor", () => {
  it("makes a schema of its own with every migration, the same as migrate() makes", async () => {
    const pool = createPool({ connectionString: testDatabaseUrl(), max: 1, applicationName: "test", queryTimeoutMs: 0 });
    const [viaMigrate, viaScript] = [uniqueSchemaName(), uniqueSchemaName()];
    try {
      await migrate(pool, viaMigrate);
      await createMigratedSchema(pool, viaScript);
      const shape = async (schema: string) => {
        const { rows } = await pool.query(
          `SELECT kind, name, detail FROM (
             SELECT 'column' AS kind, table_name || '.' || column_name AS name, data_type || ' ' || is_nullable || ' ' || coalesce(column_default, '') AS detail
               FROM information_schema.columns WHERE table_schema = $1
             UNION ALL SELECT 'index', indexname, replace(indexdef, quote_ident($1), 's') FROM pg_indexes WHERE schemaname = $1
             UNION ALL SELECT 'constraint', conname, replace(pg_get_constraintdef(c.oid), quote_ident($1), 's')
               FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace WHERE n.nspname = $1
             UNION ALL SELECT 'function', p.proname, md5(replace(p.prosrc, quote_ident($1), 's'))
               FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = $1
             UNION ALL SELECT 'trigger', t.tgname, c.relname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
               JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND NOT t.tgisinternal
             UNION ALL SELECT 'migration', version::text, name FROM ${quoteIdent(schema)}.migrations
           ) AS everything ORDER BY kind, name, detail`,
          [schema],
        );
        return rows;
      };
      const expected = await shape(viaMigrate);
      expect(expected.length).toBeGreaterThan(50);
      expect(await shape(viaScript)).toEqual(expected);
      expect(expected).toContainEqual({ kind: "column", name: "jobs.trace_context", detail: "jsonb YES " });
    } finally {
      for (const schema of [viaMigrate, viaScript]) await pool.query(`DROP SCHEMA IF EXISTS ${quoteIdent(schema)} CASCADE`);
      await pool.end();
    }
  });

  it("close() drops the schema, and keepSchema keeps it", async () => {
    const kept = await createTestConveyor({ connectionString: testDatabaseUrl(), keepSchema: true });
    const dropped = await createTestConveyor({ connectionString: testDatabaseUrl() });
    await kept.close();
    await dropped.close();
    await dropped.close(); // twice is fine
    const exists = async (schema: string) =>
      (await test.conveyor.pool.query("SELECT 1 FROM pg_namespace WHERE nspname = $1", [schema])).rows.length === 1;
    expect(await exists(dropped.schema)).toBe(false);
    expect(await exists(kept.schema)).toBe(true);
    await test.conveyor.pool.query(`DROP SCHEMA ${quoteIdent(kept.schema)} CASCADE`);
  });
});

describe("drain()", () => {
  it("runs every ready job, and the jobs they enqueue, retries included with their delays skipped", async () => {
    calls.length = 0;
    const first = await test.conveyor.enqueue(signUp, { userId: 1, email: "ada@example.com" });
    const flaky = await test.conveyor.enqueue(welcome, { userId: 2, flaky: 2 });
    const later = await test.conveyor.enqueue(welcome, { userId: 3 }, { delayMs: 3_600_000 });
    const { attempts, jobs } = await test.drain();
    expect(calls.sort()).toEqual(["welcome 1 attempt 1", "welcome 2 attempt 1", "welcome 2 attempt 2", "welcome 2 attempt 3"]);
    expect(attempts.filter((attempt) => attempt.jobId === flaky.id).map((attempt) => [attempt.attempt, attempt.outcome])).toEqual([
      [1, "failed"],
      [2, "failed"],
      [3, "succeeded"],
    ]);
    expect(attempts.find((attempt) => attempt.jobId === flaky.id)!.error).toMatchObject({ message: "flaky 1" });
    expect(jobs.find((job) => job.id === flaky.id)).toMatchObject({ kind: "user.welcome", status: "succeeded", attempts: 3, result: { welcomed: 2 } });
    expect(jobs.find((job) => job.id === first.id)).toMatchObject({ kind: "user.signup", status: "succeeded" });
    expect(jobs.map((job) => job.id)).not.toContain(later.id); // not ready: it waits
    expect((await test.conveyor.getJob(later.id))!.status).toBe("queued");
  });

  it("leaves retries to their backoff when told to, and reports dead jobs", async () => {
    const flaky = await test.conveyor.enqueue(welcome, { userId: 4, flaky: 1 });
    const dead = await test.conveyor.enqueue(doomed, {});
    const { jobs } = await test.drain({ skipRetryDelays: false });
    expect(jobs.find((job) => job.id === flaky.id)).toMatchObject({ status: "retrying", attempts: 1 });
    expect(jobs.find((job) => job.id === dead.id)).toMatchObject({ status: "dead", attempts: 1 });
    expect((await test.drain()).jobs.find((job) => job.id === flaky.id)).toMatchObject({ status: "succeeded", attempts: 2 });
  });
});

describe("expectEnqueued and expectNotEnqueued", () => {
  it("match by kind and a deep partial payload, queue, tenant and status; fail with an AssertionError naming what was found", async () => {
    const job = await test.conveyor.enqueue(welcome, { userId: 42 }, { tenant: "acme", delayMs: 60_000 });
    expect((await test.expectEnqueued(welcome, { payload: { userId: 42 }, tenant: "acme", status: "queued" })).id).toBe(job.id);
    await test.expectEnqueued("user.welcome", { payload: { userId: 42, flaky: 0 } });
    await test.expectNotEnqueued(welcome, { payload: { userId: 43 } });
    await test.expectNotEnqueued(welcome, { payload: { userId: 42 }, tenant: "globex" });
    const missing = await test.expectEnqueued(welcome, { payload: { userId: 43 } }).catch((error: unknown) => error);
    expect(missing).toBeInstanceOf(AssertionError);
    expect((missing as Error).message).toMatch(/expected a job of kind "user.welcome" matching .*"userId":43.*\n.*"userId":42/s);
    const present = await test.expectNotEnqueued(welcome, { payload: { userId: 42 } }).catch((error: unknown) => error);
    expect(present).toBeInstanceOf(AssertionError);
    expect((present as Error).message).toContain(job.id);
  });
});
