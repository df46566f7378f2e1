import { afterAll, afterEach, describe, expect, it } from "vitest";
import { MAX_RUN_AT_MS, MIN_RUN_AT_MS } from "../src/core/defaults.js";
import { SchemaTooNewError } from "../src/core/errors.js";
import { loadMigrations } from "../src/store/migrate.js";
import { JsonLinesProcess, requireBuild, REPO_ROOT } from "./helpers/child-process.js";
import { connectTestClient, createTestConveyor, type TestConveyor, testDatabaseUrl } from "./helpers/database.js";

const cleanups: Array<() => Promise<void>> = [];
afterAll(async () => {
  await Promise.all(cleanups.map((cleanup) => cleanup()));
});

async function freshSchema(): Promise<TestConveyor> {
  const test = await createTestConveyor({}, { migrate: false });
  cleanups.push(test.cleanup);
  return test;
}

const latest = loadMigrations().at(-1)!.version;

describe("migrations", () => {
  it("create the tables on a fresh schema, then find nothing to do", async () => {
    const { conveyor, schema } = await freshSchema();
    const first = await conveyor.migrate();
    expect(first).toEqual({ applied: loadMigrations().map((m) => m.version), version: latest });

    const { rows } = await conveyor.pool.query<{ table_name: string }>(
      "SELECT table_name FROM information_schema.tables WHERE table_schema = $1",
      [schema],
    );
    expect(rows.map((row) => row.table_name)).toEqual(
      expect.arrayContaining(["jobs", "job_executions", "dead_letter_jobs", "workers", "api_keys", "migrations"]),
    );

    expect(await conveyor.migrate()).toEqual({ applied: [], version: latest });
    expect(await conveyor.schemaStatus()).toEqual({ current: latest, latest, writable: true });
  });

  it("succeed in 4 processes migrating one fresh schema at once, each version applied once", async () => {
    const script = REPO_ROOT + "/test/helpers/migrate-child.mjs";
    requireBuild("src/store/migrate.js");
    const { conveyor, schema } = await freshSchema();
    const children = Array.from({ length: 4 }, () => new JsonLinesProcess(script, [testDatabaseUrl(), schema]));
    try {
      // All connected first, then released together, so the migrations really overlap.
      await Promise.all(children.map((child) => child.next()));
      for (const child of children) child.send("go");
      const results = await Promise.all(children.map((child) => child.next<{ ok: boolean; applied: number[]; message?: string }>()));
      const exits = await Promise.all(children.map((child) => child.exited));

      for (const result of results) expect(result, result.message).toMatchObject({ ok: true });
      expect(exits.every((exit) => exit.code === 0)).toBe(true);
      // Exactly one process applied each migration; the others found it done.
      const appliedEverywhere = results.flatMap((result) => result.applied).sort((a, b) => a - b);
      expect(appliedEverywhere).toEqual(loadMigrations().map((m) => m.version));
      const ledger = await conveyor.pool.query<{ version: number; count: number }>(
        `SELECT version, count(*)::int AS count FROM "${schema}".migrations GROUP BY version ORDER BY version`,
      );
      expect(ledger.rows).toEqual(loadMigrations().map((m) => ({ version: m.version, count: 1 })));
    } finally {
      for (const child of children) child.child.kill("SIGKILL");
    }
  });

  it("refuse a database migrated by a newer Conveyor", async () => {
    const { conveyor, schema } = await freshSchema();
    await conveyor.migrate();
    await conveyor.pool.query(`INSERT INTO "${schema}".migrations (version, name) VALUES (999, '999_from_the_future')`);

    const error = await conveyor.migrate().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SchemaTooNewError);
    expect((error as SchemaTooNewError).code).toBe("SCHEMA_TOO_NEW");
    expect((error as Error).message).toContain("999");
    expect(await conveyor.schemaStatus()).toEqual({ current: 999, latest, writable: true });
  });
});

describe("schema", () => {
  let test: TestConveyor;
  afterEach(async () => {
    await test?.cleanup();
  });

  /** Insert a job row directly, overriding columns, and return the constraint it broke (or null). */
  async function violatedConstraint(overrides: Record<string, unknown>): Promise<string | null> {
    const columns = {
      id: "018f0000-0000-7000-8000-000000000001",
      tenant: "default",
      queue: "default",
      kind: "raw",
      payload: "{}",
      max_attempts: 3,
      ...overrides,
    };
    const names = Object.keys(columns);
    const client = await connectTestClient();
    try {
      await client.query(
        `INSERT INTO "${test.schema}".jobs (${names.join(", ")}) VALUES (${names.map((_, i) => `$${i + 1}`).join(", ")})`,
        Object.values(columns),
      );
      return null;
    } catch (error) {
      expect((error as { code?: string }).code).toBe("23514"); // check_violation
      return (error as { constraint?: string }).constraint ?? "(unnamed)";
    } finally {
      await client.end();
    }
  }

  it("CHECK constraints reject impossible job rows", async () => {
    test = await createTestConveyor();
    expect(await violatedConstraint({ attempts: -1 })).toBe("jobs_attempts_nonnegative");
    expect(await violatedConstraint({ max_attempts: 0 })).toBe("jobs_max_attempts_positive");
    expect(await violatedConstraint({ attempts: 4, max_attempts: 3 })).toBe("jobs_attempts_within_max");
    expect(await violatedConstraint({ status: "paused" })).toBe("jobs_status_valid");
    expect(await violatedConstraint({ priority: 1001 })).toBe("jobs_priority_range");
    expect(await violatedConstraint({ queue: "" })).toBe("jobs_names_bounded");
    // The control: the same row without the bad value goes in.
    expect(await violatedConstraint({ attempts: 3, max_attempts: 3 })).toBeNull();
  });

  it("CHECK constraints hold every bound of the job rules, and nothing past them", async () => {
    // Each rule exactly at its edges (migration 011 rewrote four of them;
    // they must accept and refuse exactly what the first versions did).
    test = await createTestConveyor();
    let id = 100;
    const row = (overrides: Record<string, unknown>) => violatedConstraint({ id: `018f0000-0000-7000-8000-${String(id++).padStart(12, "0")}`, ...overrides });
    const owned = { locked_by: "w", current_execution_id: "018f0000-0000-7000-8000-0000000000ff", lease_expires_at: new Date() };
    const cases: Array<[Record<string, unknown>, string | null]> = [
      ...["queued", "running", "retrying", "succeeded", "cancelled", "dead"].map((status): [Record<string, unknown>, string | null] => [
        { status, ...(status === "running" ? owned : {}), ...(["succeeded", "cancelled", "dead"].includes(status) ? { finished_at: new Date() } : {}) },
        null,
      ]),
      [{ status: "Queued" }, "jobs_status_valid"],
      [{ priority: 1000 }, null],
      [{ priority: -1000 }, null],
      [{ priority: 1001 }, "jobs_priority_range"],
      [{ priority: -1001 }, "jobs_priority_range"],
      [{ tenant: "t".repeat(128), queue: "q".repeat(128), kind: "k".repeat(128) }, null],
      [{ kind: "é".repeat(128) }, null], // characters, not bytes
      [{ tenant: "" }, "jobs_names_bounded"],
      [{ kind: "" }, "jobs_names_bounded"],
      [{ tenant: "t".repeat(129) }, "jobs_names_bounded"],
      [{ queue: "q".repeat(129) }, "jobs_names_bounded"],
      [{ kind: "k".repeat(129) }, "jobs_names_bounded"],
      [{ status: "running", ...owned, lease_expires_at: null }, "jobs_running_owned"],
      [{ status: "running", ...owned, locked_by: null }, "jobs_running_owned"],
      [{ status: "running" }, "jobs_running_owned"],
      [{ status: "queued", locked_by: "w" }, "jobs_running_owned"],
      [{ status: "retrying", lease_expires_at: new Date() }, "jobs_running_owned"],
      [{ status: "succeeded" }, "jobs_finished_iff_terminal"],
      [{ status: "dead" }, "jobs_finished_iff_terminal"],
      [{ status: "queued", finished_at: new Date() }, "jobs_finished_iff_terminal"],
      [{ unique_key: "u".repeat(255), unique_states: ["queued"] }, null],
      [{ unique_key: "", unique_states: ["queued"] }, "jobs_unique_key_bounded"],
      [{ unique_key: "u".repeat(256), unique_states: ["queued"] }, "jobs_unique_key_bounded"],
      [{ unique_states: ["queued", "retrying", "running"] }, null],
      [{ unique_states: [] }, "jobs_unique_states_valid"],
      [{ unique_states: ["retrying"] }, "jobs_unique_states_valid"],
      [{ unique_states: ["queued", "succeeded"] }, "jobs_unique_states_valid"],
      [{ unique_states: ["queued", null] }, "jobs_unique_states_valid"],
      [{ unique_key: "u" }, "jobs_unique_key_held_in_state"],
      // Migration 013: run_at from 2000-01-01 UTC (inclusive) to the year 10000 (exclusive), as MIN_RUN_AT_MS/MAX_RUN_AT_MS.
      [{ run_at: new Date(MIN_RUN_AT_MS) }, null],
      [{ run_at: "9999-12-31 23:59:59.999999+00" }, null],
      [{ run_at: new Date(MAX_RUN_AT_MS - 1) }, null],
      [{ run_at: "1999-12-31 23:59:59.999999+00" }, "jobs_run_at_bounded"],
      [{ run_at: new Date(MAX_RUN_AT_MS) }, "jobs_run_at_bounded"],
      [{ run_at: "275761-01-01 00:00:00+00" }, "jobs_run_at_bounded"],
      [{ run_at: "infinity" }, "jobs_run_at_bounded"],
      [{ run_at: "-infinity" }, "jobs_run_at_bounded"],
      [{ status: "retrying", run_at: "10000-01-01 00:00:00+00" }, "jobs_run_at_bounded"],
    ];
    for (const [overrides, expected] of cases) expect(await row(overrides), JSON.stringify(overrides).slice(0, 120)).toBe(expected);
  });

  it("migration 013 applies over stored run times outside its bound, leaving the rule NOT VALID but enforced", async () => {
    test = await createTestConveyor();
    const { pool } = test.conveyor;
    const jobs = `"${test.schema}".jobs`;
    const constraint = () =>
      pool.query<{ validated: boolean }>(`SELECT convalidated AS validated FROM pg_constraint WHERE conrelid = $1::regclass AND conname = 'jobs_run_at_bounded'`, [jobs]);
    expect((await constraint()).rows).toEqual([{ validated: true }]);
    // As a database from before 013 could hold: the rule gone, two rows outside it.
    await pool.query(`ALTER TABLE ${jobs} DROP CONSTRAINT jobs_run_at_bounded`);
    await pool.query(`DELETE FROM "${test.schema}".migrations WHERE version = 13`);
    expect(await violatedConstraint({ run_at: "275761-01-01 00:00:00+00" })).toBeNull();
    expect(await violatedConstraint({ id: "018f0000-0000-7000-8000-000000000002", run_at: "1970-01-01 00:00:00+00" })).toBeNull();

    expect((await test.conveyor.migrate()).applied).toEqual([13]);
    expect((await constraint()).rows).toEqual([{ validated: false }]);
    expect(await violatedConstraint({ id: "018f0000-0000-7000-8000-000000000003", run_at: "infinity" })).toBe("jobs_run_at_bounded");
    // Once the rows are mended, the documented statement validates it.
    await pool.query(`UPDATE ${jobs} SET run_at = now()`);
    await pool.query(`ALTER TABLE ${jobs} VALIDATE CONSTRAINT jobs_run_at_bounded`);
    expect((await constraint()).rows).toEqual([{ validated: true }]);
  });

  it("deleting jobs by any statement deletes their executions (a statement trigger, not a foreign key)", async () => {
    test = await createTestConveyor();
    const { pool } = test.conveyor;
    const s = test.schema;
    const { rows: jobs } = await pool.query<{ id: string }>(
      `INSERT INTO "${s}".jobs (id, tenant, queue, kind, payload, max_attempts)
       SELECT "${s}".uuid_v7(), 'default', 'default', 'k', '{}', 3 FROM generate_series(1, 3) RETURNING id`,
    );
    const ids = jobs.map((job) => job.id);
    // Two executions per job, as two attempts would leave.
    await pool.query(
      `INSERT INTO "${s}".job_executions (id, job_id, attempt, worker_id, started_at, finished_at, outcome)
       SELECT "${s}".uuid_v7(), id, n, 'w', now(), now(), 'failed' FROM unnest($1::uuid[]) AS id, generate_series(1, 2) AS n`,
      [ids],
    );
    await pool.query(`DELETE FROM "${s}".jobs WHERE id = ANY($1::uuid[])`, [ids.slice(0, 2)]);
    const { rows: left } = await pool.query<{ job_id: string }>(`SELECT job_id FROM "${s}".job_executions`);
    expect(left.map((row) => row.job_id)).toEqual([ids[2], ids[2]]);
    const { rows: keys } = await pool.query(
      `SELECT conname FROM pg_constraint WHERE conrelid = '"${s}".job_executions'::regclass AND contype = 'f'`,
    );
    expect(keys).toEqual([]);
  });

  it("hot paths have partial indexes", async () => {
    test = await createTestConveyor();
    const { rows } = await test.conveyor.pool.query<{ name: string; predicate: string | null }>(
      `SELECT c.relname AS name, pg_get_expr(i.indpred, i.indrelid) AS predicate
         FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = $1`,
      [test.schema],
    );
    const predicate = (name: string) => rows.find((row) => row.name === name)?.predicate ?? null;
    for (const ready of ["jobs_ready_idx", "jobs_ready_by_queue_idx"]) {
      expect(predicate(ready)).toMatch(/status.*queued.*retrying/);
    }
    expect(predicate("jobs_running_lease_idx")).toMatch(/status = 'running'/);
    expect(predicate("jobs_idempotency_key_idx")).toMatch(/idempotency_key IS NOT NULL/);
  });
});
