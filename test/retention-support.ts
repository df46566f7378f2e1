/**
 * Rows in any state, made old in SQL: jobs are enqueued through the client,
 * then moved to their state with the timestamps (finished_at, …) set
 * `ageMs` in the past, each with an execution row (a dead job is its own
 * dead letter, dead as long ago as it finished), so a prune has real
 * cascades to follow.
 */
import type { Conveyor } from "../packages/core/src/index.js";
import { sql } from "./worker/support.js";

export type RowState = "queued" | "running" | "retrying" | "succeeded" | "cancelled" | "dead";

export const DAY_MS = 24 * 60 * 60 * 1000;

/** `count` jobs of kind `kind` in `state`, `ageMs` old; returns their ids. */
export async function makeJobs(conveyor: Conveyor, kind: string, count: number, state: RowState, ageMs: number): Promise<string[]> {
  const jobs = await conveyor.enqueueMany(Array.from({ length: count }, () => ({ job: kind, payload: {}, maxAttempts: 2 })));
  const ids = jobs.map((job) => job.id);
  const age = "now() - $2::float8 * interval '1 millisecond'";
  await sql(conveyor, `UPDATE {{schema}}.jobs SET created_at = ${age} - interval '1 minute', run_at = ${age}, updated_at = ${age} WHERE id = ANY($1)`, [ids, ageMs]);
  if (state === "queued") return ids;
  if (state === "running") {
    // The running attempt lives on the job row; its execution row is written when it ends.
    await sql(
      conveyor,
      `UPDATE {{schema}}.jobs SET status = 'running', attempts = 1, locked_by = 'old-worker', started_at = ${age},
         current_execution_id = {{schema}}.uuid_v7(), lease_expires_at = now() + interval '1 hour'
       WHERE id = ANY($1)`,
      [ids, ageMs],
    );
    return ids;
  }
  const outcome = { retrying: "failed", succeeded: "succeeded", cancelled: "cancelled", dead: "failed" }[state];
  await sql(
    conveyor,
    `INSERT INTO {{schema}}.job_executions (id, job_id, attempt, worker_id, started_at, finished_at, outcome)
     SELECT {{schema}}.uuid_v7(), id, 1, 'old-worker', ${age}, ${age}, $3 FROM {{schema}}.jobs WHERE id = ANY($1)`,
    [ids, ageMs, outcome],
  );
  const finished = state === "retrying" ? "NULL" : age;
  await sql(
    conveyor,
    `UPDATE {{schema}}.jobs SET status = $3, attempts = CASE WHEN $3 = 'dead' THEN 2 ELSE 1 END, started_at = ${age},
       finished_at = ${finished},
       dead_letter_id = CASE WHEN $3 = 'dead' THEN {{schema}}.uuid_v7() END,
       dead_reason = CASE WHEN $3 = 'dead' THEN 'attempts_exhausted' END
     WHERE id = ANY($1)`,
    [ids, ageMs, state],
  );
  return ids;
}

/**
 * Ids of `ids` that still have a row in `table` (`id` for jobs, `job_id` for
 * the tables and the view that point at jobs), or, for "dead letters", that
 * are still dead jobs with their dead letter.
 */
export async function surviving(
  conveyor: Conveyor,
  table: "jobs" | "job_executions" | "job_attempts" | "dead letters",
  ids: readonly string[],
): Promise<string[]> {
  const text =
    table === "dead letters"
      ? "SELECT id FROM {{schema}}.jobs_dead WHERE id = ANY($1) AND dead_letter_id IS NOT NULL"
      : `SELECT DISTINCT ${table === "jobs" ? "id" : "job_id"} AS id FROM {{schema}}.${table} WHERE ${table === "jobs" ? "id" : "job_id"} = ANY($1)`;
  const { rows } = await sql(conveyor, text, [ids]);
  return rows.map((row: { id: string }) => row.id).sort();
}
