import { afterAll, afterEach, describe, expect, it } from "vitest";
import { MAX_RUN_AT_MS, MIN_RUN_AT_MS } from "../src/core/defaults.js";
import { SchemaTooNewError } from "../src/core/errors.js";
import { loadMigrations } from "../src/store/migrate.js";
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

describe("migration 019 over attempts claimed before it", () => {
  /** Apply the migrations before `version` as `migrate()` would have, ledger included. */
  async function migrateBefore(test: TestConveyor, version: number): Promise<void> {
    const s = `"${test.schema}"`;
    const client = await test.conveyor.pool.connect();
    try {
      await client.query(`CREATE SCHEMA ${s}`);
      await client.query(`CREATE TABLE ${s}.migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
      for (const migration of loadMigrations().filter((m) => m.version < version)) {
        await client.query(migration.sql.replaceAll("{{schema}}", s));
        await client.query(`INSERT INTO ${s}.migrations (version, name) VALUES ($1, $2)`, [migration.version, migration.name]);
      }
    } finally {
      client.release();
    }
  }

  /** A claim as a worker before 019 wrote it: the job row, and a 'running' execution row. */
  const OLD_CLAIM = (s: string) => `
    WITH claimed AS (
      UPDATE ${s}.jobs SET status = 'running', attempts = attempts + 1, locked_by = 'old-worker',
        current_execution_id = ${s}.uuid_v7(), lease_expires_at = now() + $2::float8 * interval '1 millisecond',
        started_at = now(), updated_at = now()
      WHERE id = ANY($1::uuid[]) RETURNING id, attempts, current_execution_id
    )
    INSERT INTO ${s}.job_executions (id, job_id, attempt, worker_id, started_at)
    SELECT current_execution_id, id, attempts, 'old-worker', now() FROM claimed RETURNING job_id, id`;

  it("shows each running attempt once and records it once, finished, however it ends", async () => {
    const test = await freshSchema();
    const { conveyor } = test;
    const s = `"${test.schema}"`;
    await migrateBefore(test, 19);
    const ids = Array.from({ length: 7 }, (_, n) => `018f0000-0000-7000-8000-00000000010${n}`);
    const [done, failed, buried, expired, inTransaction, handedBack, neverClaimed] = ids as [string, string, string, string, string, string, string];
    await conveyor.pool.query(
      `INSERT INTO ${s}.jobs (id, tenant, queue, kind, payload, max_attempts) SELECT id, 'default', 'default', 'k', '{}', 2 FROM unnest($1::uuid[]) AS id`,
      [ids],
    );
    // `buried` failed once already; its second attempt, claimed below, is its last.
    await conveyor.pool.query(OLD_CLAIM(s), [[buried], 60_000]);
    await conveyor.pool.query(
      `WITH ended AS (
         UPDATE ${s}.jobs SET status = 'retrying', locked_by = NULL, current_execution_id = NULL, lease_expires_at = NULL WHERE id = $1
       )
       UPDATE ${s}.job_executions SET outcome = 'failed', finished_at = now(), error = '{"message":"first"}' WHERE job_id = $1`,
      [buried],
    );
    const { rows: claimed } = await conveyor.pool.query<{ job_id: string; id: string }>(OLD_CLAIM(s), [ids.slice(0, 6), 60_000]);
    const executionOf = new Map(claimed.map((row) => [row.job_id, row.id]));
    await conveyor.pool.query(`UPDATE ${s}.jobs SET lease_expires_at = now() - interval '1 second' WHERE id = $1`, [expired]);

    expect((await conveyor.migrate()).applied).toEqual([19]);
    const ended = () =>
      conveyor.pool.query<{ convalidated: boolean }>(
        `SELECT convalidated FROM pg_constraint WHERE conrelid = '${s}.job_executions'::regclass AND conname = 'job_executions_ended'`,
      );
    expect((await ended()).rows).toEqual([{ convalidated: false }]); // six 'running' rows from before
    const { rows: listed } = await conveyor.pool.query<{ id: string }>(`SELECT id FROM ${s}.executions_running_before_019`);
    expect(listed.map((row) => row.id).sort()).toEqual([...executionOf.values()].sort());
    // Each running attempt is read once, from its job row, as before the migration.
    for (const id of ids.slice(0, 6)) {
      const job = await conveyor.getJob(id);
      const running = job!.executions.filter((e) => e.outcome === "running");
      expect(running, id).toEqual([
        expect.objectContaining({ id: executionOf.get(id), jobId: id, attempt: job!.attempts, workerId: "old-worker", finishedAt: null }),
      ]);
    }
    // A worker before 019 can no longer write a running row.
    const refused = await conveyor.pool.query(OLD_CLAIM(s), [[neverClaimed], 60_000]).catch((error: { constraint?: string }) => error);
    expect(refused).toMatchObject({ constraint: "job_executions_ended" });

    const store = storeOf(conveyor);
    expect(await store.jobComplete("old-worker", [{ jobId: done, executionId: executionOf.get(done)!, result: null }])).toEqual(new Set([executionOf.get(done)]));
    const end = (jobId: string, outcome: "failed" | "interrupted", nextStatus: "retrying" | "queued" | "dead") => ({
      jobId, executionId: executionOf.get(jobId)!, outcome, error: JSON.stringify({ message: outcome }), nextStatus,
      delayMs: 0, countsAttempt: outcome !== "interrupted", deadReason: nextStatus === "dead" ? ("attempts_exhausted" as const) : null,
    });
    const moved = await store.jobEndAttempts([end(failed, "failed", "retrying"), end(buried, "failed", "dead"), end(handedBack, "interrupted", "queued")]);
    expect(moved.map((job) => [job.id, job.status]).sort()).toEqual([[buried, "dead"], [failed, "retrying"], [handedBack, "queued"]].sort());
    expect((await store.jobReclaimExpired(10)).map((job) => job.id)).toEqual([expired]);
    const tx = await conveyor.pool.connect();
    try {
      await tx.query("BEGIN");
      expect(await dbOf(conveyor).handlers.jobCompleteInTransaction(tx, "old-worker", inTransaction, executionOf.get(inTransaction)!, null)).toBe(true);
      await tx.query("COMMIT");
    } finally {
      tx.release();
    }

    // One finished row per attempt, the old 'running' one finished in place.
    const { rows } = await conveyor.pool.query(`SELECT id, job_id, attempt, worker_id, outcome, finished_at IS NOT NULL AS finished FROM ${s}.job_executions`);
    const outcome = (jobId: string) => rows.filter((row) => row.job_id === jobId).map((row) => [row.attempt, row.outcome]);
    expect(rows.every((row) => row.finished && row.worker_id === "old-worker")).toBe(true);
    expect(outcome(done)).toEqual([[1, "succeeded"]]);
    expect(outcome(failed)).toEqual([[1, "failed"]]);
    expect(outcome(buried).sort()).toEqual([[1, "failed"], [2, "failed"]]);
    expect(outcome(expired)).toEqual([[1, "lease_expired"]]);
    expect(outcome(inTransaction)).toEqual([[1, "succeeded"]]);
    expect(outcome(handedBack)).toEqual([[1, "interrupted"]]);
    expect(rows.filter((row) => executionOf.has(row.job_id) && row.id === executionOf.get(row.job_id))).toHaveLength(6);
    // The dead letter holds both attempts, the ending one once.
    const [letter] = (await conveyor.listDeadLetters({})).items;
    expect(letter!.history.map((h) => [h.attempt, h.outcome, h.error?.message])).toEqual([[1, "failed", "first"], [2, "failed", "failed"]]);
    // Nothing running is left from before: the rule can be validated now.
    await conveyor.pool.query(`ALTER TABLE ${s}.job_executions VALIDATE CONSTRAINT job_executions_ended`);
    expect((await ended()).rows).toEqual([{ convalidated: true }]);
  });
});
