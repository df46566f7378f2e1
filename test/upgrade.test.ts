import { execFileSync } from "node:child_process";
import { afterAll, describe, expect, it } from "vitest";
import { defineJob } from "../packages/core/src/index.js";
import { ROUTINES } from "../packages/core/src/store/routines/index.js";
import { createSchemaAsOf, loadMigrations } from "../packages/core/src/store/migrate.js";
import { REPO_ROOT } from "./helpers/child-process.js";
import { createTestConveyor, type TestConveyor } from "./helpers/database.js";
import { dumpSchema } from "./helpers/schema-dump.js";
import { waitFor } from "./helpers/wait-for.js";
import { drained, emptyPayload } from "./worker/support.js";

/**
 * The newest commit before migrations were squashed into a baseline and the
 * functions moved to routine files: its schema is what a database migrated
 * by an older build has. Its migrations are read from the repository's
 * history, so that no copy of the old functions' text is kept in the tree.
 */
const OLD_BUILD = "ee1df39";

function git(...args: string[]): string {
  try {
    return execFileSync("git", args, { cwd: REPO_ROOT, encoding: "utf8", maxBuffer: 16 * 1024 * 1024 });
  } catch (error) {
    throw new Error(`the upgrade test reads ${OLD_BUILD}'s migrations from git history, which this checkout lacks: ${String(error)}`);
  }
}

/** The migrations of the old build, in order. */
function oldMigrations(): Array<{ version: number; name: string; sql: string }> {
  return git("ls-tree", "--name-only", OLD_BUILD, "src/store/migrations/")
    .split("\n")
    .filter((path) => /\/\d+_[^/]+\.sql$/.test(path))
    .map((path) => {
      const file = path.slice(path.lastIndexOf("/") + 1);
      return { version: Number.parseInt(file, 10), name: file.replace(/\.sql$/, ""), sql: git("show", `${OLD_BUILD}:${path}`) };
    })
    .sort((a, b) => a.version - b.version);
}

const cleanups: TestConveyor[] = [];
afterAll(async () => {
  await Promise.all(cleanups.map((test) => test.cleanup()));
});

describe(`upgrading a database migrated by ${OLD_BUILD}`, () => {
  it("keeps every job, finishes every running attempt once, and ends with the current schema", async () => {
    const ran: string[] = [];
    const handler = async ({ job }: { job: { id: string } }) => {
      ran.push(job.id);
      return { ok: true };
    };
    const jobs = ["old", "new"].map((kind) => defineJob({ kind, schema: emptyPayload, handler }));
    const test = await createTestConveyor({ jobs }, { migrate: false });
    cleanups.push(test);
    const { conveyor } = test;
    const s = `"${test.schema}"`;
    const query = (text: string, values: unknown[] = []) => conveyor.pool.query(text, values);
    const migrations = oldMigrations();
    expect(migrations.map((m) => m.version)).toEqual(Array.from({ length: 19 }, (_, n) => n + 1));
    const apply = async (migration: { version: number; name: string; sql: string }) => {
      await query(migration.sql.replaceAll("{{schema}}", s));
      await query(`INSERT INTO ${s}.migrations (version, name) VALUES ($1, $2)`, [migration.version, migration.name]);
    };
    await createSchemaAsOf(conveyor.pool, test.schema, migrations.filter((m) => m.version < 19));

    const insert = (kind: string, count: number, extra = "") =>
      query(
        `INSERT INTO ${s}.jobs (id, tenant, queue, kind, payload, max_attempts ${extra ? ", has_dependents" : ""})
         SELECT ${s}.uuid_v7(), 'default', 'default', $1, '{}', 3 ${extra} FROM generate_series(1, $2) RETURNING id`,
        [kind, count],
      ).then((result) => result.rows.map((row: { id: string }) => row.id));
    // Attempts claimed before migration 19: a 'running' execution row each.
    const preBaseline = await insert("old", 2);
    await query(
      `WITH claimed AS (
         UPDATE ${s}.jobs SET status = 'running', attempts = 1, locked_by = 'old-worker', current_execution_id = ${s}.uuid_v7(),
           lease_expires_at = now() + interval '1 minute', started_at = now(), updated_at = now()
         WHERE id = ANY($1::uuid[]) RETURNING id, current_execution_id)
       INSERT INTO ${s}.job_executions (id, job_id, attempt, worker_id, started_at)
       SELECT current_execution_id, id, 1, 'old-worker', now() FROM claimed`,
      [preBaseline],
    );
    await apply(migrations.find((m) => m.version === 19)!);

    // Attempts claimed by the old build's own claim function, after 19.
    const claimedOld = await insert("old", 3);
    const { rows: claimRows } = await query(
      `SELECT id FROM ${s}.job_claim_fair('old-worker', 10, ARRAY['old'], NULL, 60000, ARRAY[]::uuid[], 1000)`,
    );
    expect(claimRows.map((row: { id: string }) => row.id).sort()).toEqual(claimedOld.sort());
    const queued = await insert("new", 4);
    // A dependency and its waiting dependent, released by the triggers.
    const [parent] = await insert("new", 1, ", true");
    const [child] = await insert("new", 1);
    await query(`UPDATE ${s}.jobs SET status = 'waiting' WHERE id = $1`, [child]);
    await query(`INSERT INTO ${s}.job_dependencies (depends_on, job_id, on_failure) VALUES ($1, $2, 'fail')`, [parent, child]);
    await query(`INSERT INTO ${s}.job_dependency_state (job_id, pending) VALUES ($1, 1)`, [child]);
    const running = [...preBaseline, ...claimedOld];
    const { rows: before } = await query(`SELECT id, current_execution_id FROM ${s}.jobs WHERE id = ANY($1::uuid[])`, [running]);
    const oldExecution = new Map(before.map((row: { id: string; current_execution_id: string }) => [row.id, row.current_execution_id]));

    const result = await conveyor.migrate();
    expect(result.applied).toEqual(loadMigrations().filter((m) => m.version > 19).map((m) => m.version));
    expect(result.routines.sort()).toEqual(ROUTINES.map((routine) => routine.name).sort());
    await expect(await dumpSchema(conveyor.pool, test.schema)).toMatchFileSnapshot("../packages/core/src/store/schema.sql");
    expect((await conveyor.migrate()).routines).toEqual([]);

    // The old worker is gone: its leases run out, and new workers take over.
    await query(`UPDATE ${s}.jobs SET lease_expires_at = now() - interval '1 second' WHERE id = ANY($1::uuid[])`, [running]);
    const worker = conveyor.worker({ concurrency: 4, pollIntervalMs: 50, reclaimIntervalMs: 100 });
    await worker.start();
    try {
      await waitFor("every job to finish", async () => (await drained(conveyor)) && ran.length >= 11);
    } finally {
      await worker.stop();
    }

    const { rows: statuses } = await query(`SELECT status, count(*)::int AS n FROM ${s}.jobs GROUP BY status`);
    expect(statuses).toEqual([{ status: "succeeded", n: 11 }]);
    expect(ran.sort()).toEqual([...running, ...queued, parent, child].sort());
    const { rows: executions } = await query(
      `SELECT id, job_id, attempt, outcome, finished_at IS NOT NULL AS finished FROM ${s}.job_attempts ORDER BY job_id, attempt`,
    );
    expect(executions.every((row: { finished: boolean }) => row.finished)).toBe(true);
    expect(new Set(executions.map((row: { id: string }) => row.id)).size).toBe(executions.length);
    for (const id of running) {
      // The old attempt once, as the reclaim recorded it, under its own execution id; then the new one.
      expect(executions.filter((row: { job_id: string }) => row.job_id === id).map((row: { id: string; outcome: string }) => [row.id === oldExecution.get(id), row.outcome]), id).toEqual([
        [true, "lease_expired"],
        [false, "succeeded"],
      ]);
    }
    for (const id of [...queued, parent!, child!]) {
      expect(executions.filter((row: { job_id: string }) => row.job_id === id).map((row: { outcome: string }) => row.outcome), id).toEqual(["succeeded"]);
    }
  });
});
