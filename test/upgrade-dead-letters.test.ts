/**
 * Migration 032 on a schema that holds dead letters: each letter moves onto
 * its dead job's row, and every reader sees after it what it saw before,
 * ids, reasons, times and the history in order; retention still finds them
 * by the time they died.
 */
import { afterAll, describe, expect, it } from "vitest";
import { uuidv7 } from "../packages/core/src/core/ids.js";
import type { DeadLetter } from "../packages/core/src/core/model.js";
import { createSchemaAsOf, loadMigrations } from "../packages/core/src/store/migrate.js";
import { rowToDeadLetter } from "../packages/core/src/store/rows.js";
import { deadLetterJson, executionJson } from "../packages/core/src/wire/serialize.js";
import { createTestConveyor, type TestConveyor } from "./helpers/database.js";

const DAY_MS = 24 * 60 * 60 * 1000;

const cleanups: TestConveyor[] = [];
afterAll(async () => {
  await Promise.all(cleanups.map((test) => test.cleanup()));
});

describe("migration 032 on a schema with dead letters", () => {
  it("moves each letter onto its dead job, and every reader sees the same letters", async () => {
    const test = await createTestConveyor({}, { migrate: false });
    cleanups.push(test);
    const { conveyor } = test;
    const s = `"${test.schema}"`;
    const query = (text: string, values: unknown[] = []) => conveyor.pool.query(text, values);
    await createSchemaAsOf(conveyor.pool, test.schema, loadMigrations().filter((m) => m.version <= 31));

    /** A job in `status`, finished `ageMs` ago when it has ended, with `attempts` ended attempts a second apart. */
    const job = async (status: string, options: { tenant?: string; ageMs?: number; attempts?: number; outcomes?: string[] } = {}) => {
      const id = uuidv7(Date.now() - (options.ageMs ?? 0) - 60_000);
      const attempts = options.attempts ?? 0;
      const ended = status === "queued" ? "NULL" : "now() - $3::float8 * interval '1 millisecond'";
      await query(
        `INSERT INTO ${s}.jobs (id, tenant, queue, kind, payload, status, attempts, max_attempts, started_at, finished_at, last_error)
         VALUES ($1::uuid, $2, 'mail', 'send', jsonb_build_object('to', $1::text), $4, $5::integer, 3,
                 CASE WHEN $5 > 0 THEN now() - $3::float8 * interval '1 millisecond' - interval '1 minute' END, ${ended},
                 CASE WHEN $5 > 0 THEN '{"name":"Error","message":"smtp down"}'::jsonb END)`,
        [id, options.tenant ?? "acme", options.ageMs ?? 0, status, attempts],
      );
      const outcomes = options.outcomes ?? [];
      for (let attempt = 1; attempt <= attempts; attempt++) {
        await query(
          `INSERT INTO ${s}.job_executions (id, job_id, attempt, worker_id, started_at, finished_at, outcome, error)
           VALUES ($1, $2, $3::integer, 'old-worker', now() - $4::float8 * interval '1 millisecond' - interval '1 minute' + $3 * interval '1 second',
                   now() - $4::float8 * interval '1 millisecond' - interval '1 minute' + $3 * interval '1 second' + interval '10 milliseconds',
                   $5, '{"name":"Error","message":"smtp down"}')`,
          [uuidv7(), id, attempt, options.ageMs ?? 0, outcomes[attempt - 1] ?? "failed"],
        );
      }
      return id;
    };
    /** A letter for job `id` as the build before 032 wrote it: a copy of the job and a snapshot of its attempts. */
    const letter = (id: string, reason: string, deadAt = "j.finished_at") =>
      query(
        `INSERT INTO ${s}.dead_letter_jobs (id, job_id, tenant, queue, kind, payload, attempts, max_attempts, reason, last_error, history, dead_at)
         SELECT $2, j.id, j.tenant, j.queue, j.kind, j.payload, j.attempts, j.max_attempts, $3, j.last_error,
                (SELECT coalesce(jsonb_agg(jsonb_build_object(
                          'executionId', e.id, 'attempt', e.attempt, 'workerId', e.worker_id, 'startedAt', e.started_at,
                          'finishedAt', e.finished_at, 'outcome', e.outcome, 'error', e.error) ORDER BY e.started_at, e.id), '[]'::jsonb)
                 FROM ${s}.job_executions AS e WHERE e.job_id = j.id),
                ${deadAt}
         FROM ${s}.jobs AS j WHERE j.id = $1`,
        [id, uuidv7(), reason],
      );

    const exhausted = await job("dead", { ageMs: 40 * DAY_MS, attempts: 3, outcomes: ["failed", "lease_expired", "timeout"] });
    await letter(exhausted, "attempts_exhausted");
    const dependency = await job("dead", { ageMs: 2 * DAY_MS });
    await letter(dependency, "dependency_failed");
    const permanent = await job("dead", { tenant: "globex", ageMs: DAY_MS, attempts: 1 });
    // A letter written a moment after its job's end (by hand): its own time is the one kept.
    await letter(permanent, "permanent_error", "j.finished_at + interval '1.5 seconds'");
    // A dead job without a letter (its state written by hand), and a letter whose job is no longer dead.
    const unlettered = await job("dead", { attempts: 1 });
    const requeuedByHand = await job("queued");
    await letter(requeuedByHand, "attempts_exhausted", "now()");

    const { rows: stored } = await query(`SELECT * FROM ${s}.dead_letter_jobs WHERE job_id <> $1 ORDER BY id DESC`, [requeuedByHand]);
    const before: DeadLetter[] = stored.map(rowToDeadLetter);
    expect(before.map((entry) => entry.jobId)).toEqual([permanent, dependency, exhausted]);
    expect(before.map((entry) => entry.history.length)).toEqual([1, 0, 3]);

    expect((await conveyor.migrate()).applied).toEqual(loadMigrations().filter((m) => m.version > 31).map((m) => m.version));

    // The same letters, newest first, and each by its id, with the same ids, reasons, times and history.
    expect((await conveyor.deadLetters.list()).items).toEqual(before);
    for (const entry of before) expect(await conveyor.deadLetters.get(entry.id)).toEqual(entry);
    expect((await conveyor.deadLetters.list({ tenant: "globex" })).items).toEqual([before[0]]);
    expect((await conveyor.deadLetters.list({ tenant: "acme" })).items).toEqual(before.slice(1));
    // The history is the job's attempts, as the snapshot was.
    for (const entry of before) {
      expect(deadLetterJson(entry).history).toEqual((await conveyor.getJob(entry.jobId))!.executions.map(executionJson));
    }
    // Only dead rows carry a letter: the one without stays without, the requeued job's letter is gone.
    const { rows: marked } = await query(`SELECT id, status, dead_letter_id, dead_reason FROM ${s}.jobs WHERE id = ANY($1) ORDER BY id`, [
      [unlettered, requeuedByHand],
    ]);
    expect(marked).toEqual(
      [
        { id: unlettered, status: "dead", dead_letter_id: null, dead_reason: null },
        { id: requeuedByHand, status: "queued", dead_letter_id: null, dead_reason: null },
      ].sort((a, b) => a.id.localeCompare(b.id)),
    );
    const { rows: tables } = await query("SELECT to_regclass($1) AS letters", [`${s}.dead_letter_jobs`]);
    expect(tables[0].letters).toBeNull();

    // Retention finds them by the time they died: the 40-day-old one goes, with its attempts.
    expect(await conveyor.prune()).toMatchObject({ deadLetters: 1 });
    expect((await conveyor.deadLetters.list()).items).toEqual(before.slice(0, 2));
    const { rows: left } = await query(`SELECT count(*)::int AS n FROM ${s}.job_executions WHERE job_id = $1`, [exhausted]);
    expect(left[0].n).toBe(0);

    // And a letter requeues as before.
    expect(await conveyor.deadLetters.requeue(before[1]!.id)).toMatchObject({ id: dependency, status: "queued", attempts: 0 });
    expect(await conveyor.deadLetters.get(before[1]!.id)).toBeNull();
  });
});
