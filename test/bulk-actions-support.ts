/**
 * Jobs in any state for the bulk action tests, made in SQL after an
 * ordinary enqueue (as test/retention-support.ts does), and a snapshot of
 * every job row to tell which ones an action changed.
 */
import type { BulkActionTuning } from "../packages/core/src/client/bulk-action-runner.js";
import type { Conveyor, JobStatus } from "../packages/core/src/index.js";
import { sql } from "./worker/support.js";

/** Where and whose the jobs are. */
export interface JobPlace {
  queue?: string;
  tenant?: string;
  kind?: string;
  priority?: number;
}

/** `count` jobs of kind "item" (or `place.kind`) moved to `state`; returns their ids in id order. */
export async function jobsIn(conveyor: Conveyor, state: JobStatus, count: number, place: JobPlace = {}): Promise<string[]> {
  const jobs = await conveyor.enqueueMany(
    Array.from({ length: count }, (_, n) => ({
      job: place.kind ?? "item",
      payload: { n },
      maxAttempts: 3,
      ...(place.queue ? { queue: place.queue } : {}),
      ...(place.tenant ? { tenant: place.tenant } : {}),
      ...(place.priority !== undefined ? { priority: place.priority } : {}),
    })),
  );
  const ids = jobs.map((job) => job.id).sort();
  switch (state) {
    case "queued":
      break;
    case "waiting":
      await sql(conveyor, "UPDATE {{schema}}.jobs SET status = 'waiting' WHERE id = ANY($1)", [ids]);
      break;
    case "running":
      await sql(
        conveyor,
        // A running attempt lives on its job row until it ends (migration 019).
        `UPDATE {{schema}}.jobs SET status = 'running', attempts = 1, locked_by = 'test-worker', started_at = now(),
           current_execution_id = {{schema}}.uuid_v7(), lease_expires_at = now() + interval '1 hour'
         WHERE id = ANY($1)`,
        [ids],
      );
      break;
    case "sleeping":
      await sql(conveyor, "UPDATE {{schema}}.jobs SET status = 'sleeping', run_at = now() + interval '1 hour' WHERE id = ANY($1)", [ids]);
      break;
    default: {
      const outcome = { retrying: "failed", succeeded: "succeeded", cancelled: "cancelled", dead: "failed" }[state];
      await sql(
        conveyor,
        `INSERT INTO {{schema}}.job_executions (id, job_id, attempt, worker_id, finished_at, outcome)
         SELECT {{schema}}.uuid_v7(), id, 1, 'test-worker', now(), $2 FROM {{schema}}.jobs WHERE id = ANY($1)`,
        [ids, outcome],
      );
      // A retrying job waits for its backoff: an hour from now. A dead one
      // is its own dead letter.
      await sql(
        conveyor,
        `UPDATE {{schema}}.jobs SET status = $2, attempts = CASE WHEN $2 = 'dead' THEN 3 ELSE 1 END, started_at = now(),
           run_at = CASE WHEN $2 = 'retrying' THEN now() + interval '1 hour' ELSE run_at END,
           last_error = '{"name":"Error","message":"boom"}',
           finished_at = CASE WHEN $2 = 'retrying' THEN NULL ELSE now() END,
           dead_letter_id = CASE WHEN $2 = 'dead' THEN {{schema}}.uuid_v7() END,
           dead_reason = CASE WHEN $2 = 'dead' THEN 'attempts_exhausted' END
         WHERE id = ANY($1)`,
        [ids, state],
      );
    }
  }
  return ids;
}

/** What an action may change on a job row, by id. */
export type JobSnapshot = Map<string, { status: string; queue: string; priority: number; attempts: number; runAt: number; cancelRequested: boolean; updatedAt: number }>;

export async function snapshot(conveyor: Conveyor): Promise<JobSnapshot> {
  const { rows } = await sql(conveyor, "SELECT id, status, queue, priority, attempts, run_at, cancel_requested, updated_at FROM {{schema}}.jobs");
  return new Map(
    rows.map((row) => [
      row.id as string,
      {
        status: row.status,
        queue: row.queue,
        priority: row.priority,
        attempts: row.attempts,
        runAt: (row.run_at as Date).getTime(),
        cancelRequested: row.cancel_requested,
        updatedAt: (row.updated_at as Date).getTime(),
      },
    ]),
  );
}

/** Ids whose row changed between two snapshots, or that are gone; sorted. */
export function changedIds(before: JobSnapshot, after: JobSnapshot): string[] {
  const changed: string[] = [];
  for (const [id, row] of before) {
    const now = after.get(id);
    if (!now || JSON.stringify(now) !== JSON.stringify(row)) changed.push(id);
  }
  return changed.sort();
}

/** Set a client's bulk action batch size and pacing (an internal knob). */
export function tune(conveyor: Conveyor, tuning: Partial<BulkActionTuning>): void {
  Object.assign(conveyor.bulkActions.tuning, tuning);
}

/** Every job and operation deleted, between tests. */
export async function emptyTables(conveyor: Conveyor): Promise<void> {
  await sql(
    conveyor,
    `TRUNCATE {{schema}}.jobs, {{schema}}.job_executions, {{schema}}.bulk_actions,
       {{schema}}.flows, {{schema}}.flow_jobs, {{schema}}.job_dependencies, {{schema}}.job_dependency_state`,
  );
}
