/**
 * Jobs for the search tests, written straight into a schema so that each
 * has a known creation time (its UUIDv7 id made from it, as the client
 * makes ids), state, error, keys and payload, and every filter field can be
 * checked against a plain JavaScript predicate over the same rows.
 */
import type pg from "pg";
import { JOB_STATUSES, type JobStatus } from "../../packages/core/src/core/states.js";

export interface FixtureJob {
  id: string;
  tenant: string;
  queue: string;
  kind: string;
  status: JobStatus;
  payload: { customerId: number; plan: "free" | "pro"; tags: string[]; address: { region: string } };
  idempotencyKey: string | null;
  uniqueKey: string | null;
  error: string | null;
  createdAt: Date;
  finishedAt: Date | null;
  /** For running jobs: when the lease runs out (held by worker `fixture-worker`). */
  leaseExpiresAt: Date | null;
}

/** A UUIDv7 of Unix millisecond `ms`, its random part made from `n` (so ids of one ms stay distinct and ordered by n). */
export function uuidAt(ms: number, n: number): string {
  const random = n.toString(16).padStart(18, "0");
  const hex = `${ms.toString(16).padStart(12, "0")}7${random.slice(0, 3)}8${random.slice(3)}`;
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

export const TENANTS = ["acme", "globex"] as const;
export const QUEUES = ["mail", "billing", "reports"] as const;
export const KINDS = ["email.send", "invoice.charge", "report.build"] as const;
/** Error messages: the second and third differ from each other only where a LIKE pattern would see `%` and `_` as wildcards. */
/** The states the fixture's jobs cycle through: every state but `sleeping`, which only a durable handler reaches. */
const FIXTURE_STATUSES = JOB_STATUSES.filter((status) => status !== "sleeping");

export const ERRORS = ["Upstream 503: Service Unavailable", "Timeout after 30% of budget_x", "Timeout after 300 of budgetyx"] as const;

const HOUR = 60 * 60 * 1000;

/**
 * `count` jobs, the i-th created `startMs` + i hours (so every filter has
 * matches and non-matches): tenants, queues, kinds and states cycle at
 * different periods, so their combinations vary.
 */
export function fixtureJobs(count: number, startMs: number): FixtureJob[] {
  const jobs: FixtureJob[] = [];
  for (let i = 0; i < count; i++) {
    const status = FIXTURE_STATUSES[i % FIXTURE_STATUSES.length]!;
    const createdAt = new Date(startMs + i * HOUR);
    const terminal = status === "succeeded" || status === "cancelled" || status === "dead";
    const failed = status === "dead" || status === "retrying" || (status === "succeeded" && i % 2 === 0);
    jobs.push({
      id: uuidAt(createdAt.getTime(), i + 1),
      tenant: TENANTS[i % 2]!,
      queue: QUEUES[i % 3]!,
      kind: KINDS[Math.floor(i / 2) % 3]!,
      status,
      payload: { customerId: i % 5, plan: i % 2 === 0 ? "free" : "pro", tags: ["any", i % 3 === 0 ? "vip" : "std"], address: { region: i % 4 === 0 ? "eu" : "us" } },
      idempotencyKey: i % 4 === 0 ? `idem-${i}` : null,
      uniqueKey: (status === "queued" || status === "retrying" || status === "running") && i % 3 === 0 ? `unique-${i}` : null,
      error: failed ? ERRORS[i % 3]! : null,
      createdAt,
      finishedAt: terminal ? new Date(createdAt.getTime() + HOUR / 2) : null,
      // Even ones expired (the later the job, the longer ago), odd ones live.
      leaseExpiresAt: status === "running" ? new Date(i % 2 === 0 ? Date.now() - 60_000 - i * 1_000 : Date.now() + 600_000) : null,
    });
  }
  return jobs;
}

/** Write `jobs` into `schema` (quoted), as stored rows that pass every CHECK of the jobs table. */
export async function insertFixtureJobs(db: pg.Pool | pg.PoolClient, schema: string, jobs: readonly FixtureJob[]): Promise<void> {
  const rows = jobs.map((job) => ({
    id: job.id,
    tenant: job.tenant,
    queue: job.queue,
    kind: job.kind,
    status: job.status,
    payload: job.payload,
    idempotency_key: job.idempotencyKey,
    unique_key: job.uniqueKey,
    last_error: job.error === null ? null : { name: "Error", message: job.error },
    created_at: job.createdAt.toISOString(),
    finished_at: job.finishedAt?.toISOString() ?? null,
    lease_expires_at: job.leaseExpiresAt?.toISOString() ?? null,
  }));
  await db.query(
    `INSERT INTO ${schema}.jobs (id, tenant, queue, kind, payload, status, attempts, max_attempts, run_at, locked_by,
                                 current_execution_id, lease_expires_at, idempotency_key, unique_key, unique_states,
                                 last_error, created_at, updated_at, started_at, finished_at)
     SELECT r.id, r.tenant, r.queue, r.kind, r.payload, r.status,
            CASE WHEN r.status IN ('queued', 'waiting') THEN 0 ELSE 1 END, 3, r.created_at,
            CASE WHEN r.status = 'running' THEN 'fixture-worker' END,
            CASE WHEN r.status = 'running' THEN gen_random_uuid() END,
            r.lease_expires_at, r.idempotency_key, r.unique_key,
            CASE WHEN r.unique_key IS NOT NULL THEN '{queued,retrying,running}'::text[] END,
            r.last_error, r.created_at, r.created_at,
            CASE WHEN r.status IN ('queued', 'waiting') THEN NULL ELSE r.created_at END, r.finished_at
     FROM jsonb_to_recordset($1::jsonb) AS r(id uuid, tenant text, queue text, kind text, status text, payload jsonb,
                                            idempotency_key text, unique_key text, last_error jsonb, created_at timestamptz,
                                            finished_at timestamptz, lease_expires_at timestamptz)`,
    [JSON.stringify(rows)],
  );
}

/** Ids of `jobs` matching `match`, newest first (as searches list them). */
export function idsWhere(jobs: readonly FixtureJob[], match: (job: FixtureJob) => boolean): string[] {
  return jobs
    .filter(match)
    .map((job) => job.id)
    .sort()
    .reverse();
}
