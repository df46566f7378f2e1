import { afterAll, afterEach, describe, expect, it } from "vitest";
import { MAX_RUN_AT_MS, MIN_RUN_AT_MS } from "../packages/core/src/core/defaults.js";
import { SchemaMismatchError, SchemaTooNewError, SchemaTooOldError } from "../packages/core/src/core/errors.js";
import { BASELINE_VERSION, createSchemaAsOf, loadMigrations, migrationHash } from "../packages/core/src/store/migrate.js";
import { ROUTINES } from "../packages/core/src/store/routines/index.js";
import { JsonLinesProcess, requireBuild, REPO_ROOT } from "./helpers/child-process.js";
import { connectTestClient, createTestConveyor, dbOf, storeOf, type TestConveyor, testDatabaseUrl } from "./helpers/database.js";

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
    expect(first).toEqual({ applied: loadMigrations().map((m) => m.version), routines: ROUTINES.map((r) => r.name), version: latest });

    const { rows } = await conveyor.pool.query<{ table_name: string }>(
      "SELECT table_name FROM information_schema.tables WHERE table_schema = $1",
      [schema],
    );
    expect(rows.map((row) => row.table_name)).toEqual(
      expect.arrayContaining(["jobs", "jobs_live", "jobs_dead", "job_history", "job_executions", "workers", "api_keys", "migrations"]),
    );

    expect(await conveyor.migrate()).toEqual({ applied: [], routines: [], version: latest });
    expect(await conveyor.schemaStatus()).toEqual({ current: latest, latest, writable: true });
  });

  it("make a fresh schema in one transaction, every migration and routine in it", async () => {
    const { conveyor, schema } = await freshSchema();
    await conveyor.migrate();
    // now() is the transaction's start: one value for every ledger row means one transaction.
    const { rows } = await conveyor.pool.query<{ migrations: number; routines: number; stamps: number }>(
      `SELECT (SELECT count(DISTINCT applied_at) FROM "${schema}".migrations)::int AS migrations,
              (SELECT count(DISTINCT installed_at) FROM "${schema}".routines)::int AS routines,
              (SELECT count(*) FROM (SELECT applied_at FROM "${schema}".migrations UNION SELECT installed_at FROM "${schema}".routines) AS t)::int AS stamps`,
    );
    expect(rows[0]).toEqual({ migrations: 1, routines: 1, stamps: 1 });
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

  it("ship every released migration as it was released", () => {
    // A landed migration never changes: a schema change is a new file. A
    // database records each file's hash, and migrate refuses one that
    // applied another file under a shipped name.
    const released: Record<string, string> = {
      "019_baseline": "83baab31bb775f2c6cf4714a606cc6e811e6675f3807760bf0998042a0d5313e",
      "020_attempts_recorded_whole": "bdbc39b52e625e03a889e83ef0adda582c5e94cd8d2ed17553ec312edcda4366",
      "021_jobs_by_queue_status_tenant": "d7a06edd8596c8f371da40d5bff2313f5e0a9783af9be8446826359b41e4f253",
      "022_job_waits": "d54a1eb6f698608e65ca8277b43ff6aef3629c4910bd8a5cbac81388363607df",
      "023_jobs_finished_by_kind": "0b578acb44bdf213389c38da6053abf32443985dddfe039e259b51779ea0cf09",
      "024_durable_execution": "e497fd6867cb9ceff2e207342b082bdb5a1edfeae22ef8097fedf08b39d8357f",
      "025_job_batch_members": "5b55fc4199279a3238d6c7232afe77e29fadf7bfcd0d35ce48c1f31c67946933",
      "026_jobs_autovacuum": "c76cc4a24ac068d86fd1052a62d75e793e09a5517fa207c0bff99250be336bd7",
      "027_jobs_history_copy": "2fb8225a3d8694690743630f461114c4c641f88a8334be4399968c106513b91a",
      "028_jobs_by_state": "e7e68a048ca230bd0851873104002854d40bed8b49a4b5a27ce7f15d0d2c8da5",
      "029_job_ends": "7ce725d0c802e84c925bc97fbd574913d7b4908deb906d38a9c18096acc4273c",
      "030_job_history_copy_mark_ordered": "798507f3fbe6139008afb716ed2c4fb816a5996dca34e078cc6a5dea7b8b1264",
      "031_history_costs_less": "a299fe42fe623a28968cc6f9fdf564973ebbbd54f3f880869fe7bf09e68c28bf",
      "032_dead_jobs_stored_once": "b8174833518164132ccf001fdcaeb90833194c1214f56b9cbe953e0efbb6453c",
      "033_step_record_states": "909c273f299efa48c270f1d40dc1cd20422f193df592b31b25e7301add05ec88",
      "034_job_requeues": "a2abe1513f45d2909d5b336a86fc6b9c113335242ead736214cfc17685b3fc51",
    };
    const shipped = Object.fromEntries(loadMigrations().map((migration) => [migration.name, migrationHash(migration)]));
    // Every released one, unchanged; a new file is added here when it lands.
    expect(shipped).toEqual(released);
  });

  it("record each migration's hash, and fill in those of a ledger that has none", async () => {
    const { conveyor, schema } = await freshSchema();
    // The build before hashes were recorded: a ledger without them, through 026.
    await createSchemaAsOf(conveyor.pool, schema, loadMigrations().filter((m) => m.version <= 26));
    await conveyor.pool.query(`ALTER TABLE "${schema}".migrations DROP COLUMN sha256`);
    await conveyor.migrate();
    const { rows } = await conveyor.pool.query<{ name: string; sha256: string }>(`SELECT name, sha256 FROM "${schema}".migrations ORDER BY version`);
    expect(rows).toEqual(loadMigrations().map((migration) => ({ name: migration.name, sha256: migrationHash(migration) })));
  });

  it("refuse a database that applied another file under a shipped number or name, changing nothing", async () => {
    const { conveyor, schema } = await freshSchema();
    await createSchemaAsOf(conveyor.pool, schema, loadMigrations().filter((m) => m.version <= 26));
    const before = async () =>
      (await conveyor.pool.query(`SELECT version, name, sha256 FROM "${schema}".migrations ORDER BY version`)).rows;

    // Another copy of 024 (a column type changed after it was applied).
    await conveyor.pool.query(`UPDATE "${schema}".migrations SET sha256 = repeat('0', 64) WHERE version = 24`);
    const ledger = await before();
    const edited = await conveyor.migrate().catch((e: unknown) => e);
    expect(edited).toBeInstanceOf(SchemaMismatchError);
    expect((edited as SchemaMismatchError).code).toBe("SCHEMA_MISMATCH");
    expect((edited as Error).message).toContain("024_durable_execution");
    expect(await before()).toEqual(ledger);

    // A migration renamed after it was applied: this database's 026 is another file.
    await conveyor.pool.query(`UPDATE "${schema}".migrations SET sha256 = NULL WHERE version = 24`);
    await conveyor.pool.query(`UPDATE "${schema}".migrations SET name = '026_jobs_by_state' WHERE version = 26`);
    const renamed = await conveyor.migrate().catch((e: unknown) => e);
    expect(renamed).toBeInstanceOf(SchemaMismatchError);
    expect((renamed as Error).message).toContain("026_jobs_by_state");
    const { rows } = await conveyor.pool.query<{ n: number }>(`SELECT max(version)::int AS n FROM "${schema}".migrations`);
    expect(rows[0]!.n).toBe(26);
  });

  it("give the step records written before 033 their own states, none a job's", async () => {
    const { conveyor, schema } = await freshSchema();
    // A schema from before 033 (the later ones need the routines ledger, which migrate() makes).
    await createSchemaAsOf(conveyor.pool, schema, loadMigrations().filter((m) => m.version <= 27));
    const job = "0190f5e0-0000-7000-8000-000000000001";
    await conveyor.pool.query(
      `INSERT INTO "${schema}".job_steps (job_id, name, kind, state, attempt, execution_id, started_at, tenant, event, event_key, event_id)
       SELECT $1::uuid, name, kind, state, 1, $1::uuid, now(), 'default', event, event_key, event_id::uuid
       FROM (VALUES ('charge', 'step', 'completed', NULL, NULL, NULL), ('ship', 'step', 'failed', NULL, NULL, NULL),
                    ('nap', 'sleep', 'sleeping', NULL, NULL, NULL), ('rest', 'sleep', 'completed', NULL, NULL, NULL),
                    ('paid', 'wait', 'waiting', 'invoice.paid', 'k', NULL), ('got', 'wait', 'received', 'invoice.paid', 'k', $1::text),
                    ('late', 'wait', 'timed_out', 'invoice.paid', 'k', NULL)) AS r(name, kind, state, event, event_key, event_id)`,
      [job],
    );
    await conveyor.migrate();
    const { rows } = await conveyor.pool.query<{ name: string; state: string }>(`SELECT name, state FROM "${schema}".job_steps ORDER BY seq`);
    expect(Object.fromEntries(rows.map((row) => [row.name, row.state]))).toEqual({
      charge: "completed",
      ship: "failed",
      nap: "asleep",
      rest: "awake",
      paid: "awaiting",
      got: "received",
      late: "timed_out",
    });
    // The open wait is counted by the new word, which is the rebuilt index's predicate.
    expect(await dbOf(conveyor).steps.waitsOpenCount(10)).toBe(1);
  });

  it("refuse a database migrated before the baseline, changing nothing", async () => {
    const { conveyor, schema } = await freshSchema();
    await conveyor.pool.query(`CREATE SCHEMA "${schema}"`);
    await conveyor.pool.query(`CREATE TABLE "${schema}".migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
    await conveyor.pool.query(`INSERT INTO "${schema}".migrations (version, name) VALUES (1, '001_initial'), (2, '002_retention')`);

    const error = await conveyor.migrate().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SchemaTooOldError);
    expect((error as Error).message).toContain(`before this Conveyor's baseline (${BASELINE_VERSION})`);
    const { rows } = await conveyor.pool.query(`SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY 1`, [schema]);
    expect(rows.map((row: { table_name: string }) => row.table_name)).toEqual(["migrations", "routines"]);
  });

  it("reinstall a routine whose text changed, and leave one a newer build installed", async () => {
    const { conveyor, schema } = await freshSchema();
    await conveyor.migrate();
    const s = `"${schema}"`;
    // As if the source of uuid_v7 had changed since it was installed: the ledger's hash differs, and so does the body.
    await conveyor.pool.query(`CREATE OR REPLACE FUNCTION ${s}.uuid_v7() RETURNS uuid LANGUAGE sql AS $$ SELECT NULL::uuid $$`);
    await conveyor.pool.query(`UPDATE ${s}.routines SET sha256 = 'changed' WHERE name = 'uuid_v7'`);
    // As if a build with a newer migration had installed its own job_claim_fair.
    await conveyor.pool.query(`UPDATE ${s}.routines SET sha256 = 'newer', version = 999 WHERE name = 'job_claim_fair'`);

    expect(await conveyor.migrate()).toEqual({ applied: [], routines: ["uuid_v7"], version: latest });
    const { rows } = await conveyor.pool.query(`SELECT ${s}.uuid_v7() IS NOT NULL AS made`);
    expect(rows).toEqual([{ made: true }]);
    const { rows: ledger } = await conveyor.pool.query(`SELECT name, sha256, version FROM ${s}.routines WHERE name IN ('uuid_v7', 'job_claim_fair') ORDER BY name`);
    expect(ledger).toEqual([
      { name: "job_claim_fair", sha256: "newer", version: 999 },
      { name: "uuid_v7", sha256: expect.stringMatching(/^[0-9a-f]{64}$/), version: latest },
    ]);
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
    expect(await violatedConstraint({ status: "paused" })).toBe("(unnamed)"); // no partition takes it
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
      // A state no partition lists has no partition to go to: PostgreSQL
      // refuses the row before any CHECK (23514, naming no constraint).
      [{ status: "Queued" }, "(unnamed)"],
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
      // Migration 032: only a dead job carries a dead letter, its id and reason together.
      ...[
        [{ status: "dead", finished_at: new Date(), dead_reason: "attempts_exhausted" }, null],
        [{ status: "dead", finished_at: new Date(), dead_reason: "dependency_failed" }, null],
        [{ status: "dead", finished_at: new Date(), dead_reason: "permanent_error" }, null],
        [{ status: "dead", finished_at: new Date(), dead_reason: "tired" }, "jobs_dead_letter_valid"],
        [{ status: "dead", finished_at: new Date(), dead_reason: null }, "jobs_dead_letter_valid"],
        [{ status: "queued", dead_reason: "attempts_exhausted" }, "jobs_dead_letter_valid"],
        [{ status: "cancelled", finished_at: new Date(), dead_reason: "attempts_exhausted" }, "jobs_dead_letter_valid"],
      ].map(([overrides, expected], n): [Record<string, unknown>, string | null] => [
        { dead_letter_id: `018f0000-0000-7000-8000-${String(1000 + n).padStart(12, "0")}`, ...(overrides as object) },
        expected as string | null,
      ]),
      [{ status: "dead", finished_at: new Date(), dead_reason: "attempts_exhausted" }, "jobs_dead_letter_valid"], // a reason with no id
    ];
    for (const [overrides, expected] of cases) expect(await row(overrides), JSON.stringify(overrides).slice(0, 120)).toBe(expected);
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
