// The API's JSON shapes, from the server's own serialisers, so the two cannot drift.
export type { ErrorJson, ExecutionJson, JobJson } from "../../src/wire/serialize.js";
export { JOB_STATUSES, type JobStatus } from "../../src/core/states.js";
import type { ExecutionJson, JobJson } from "../../src/wire/serialize.js";

export type JobWithExecutions = JobJson & { executions: ExecutionJson[] };

export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}

export interface DeadLetterJson {
  id: string;
  jobId: string;
  tenant: string;
  queue: string;
  kind: string;
  payload: unknown;
  attempts: number;
  maxAttempts: number;
  reason: "attempts_exhausted" | "permanent_error";
  lastError: { name: string; message: string } | null;
  history: ExecutionJson[];
  deadAt: string | null;
}

export interface QueueStatsJson {
  queue: string;
  counts: Record<"queued" | "running" | "retrying" | "succeeded" | "cancelled" | "dead", number>;
  oldestReadyAgeMs: number | null;
  paused: boolean;
  concurrencyLimit: number | null;
  rateLimit: { count: number; intervalMs: number } | null;
}

export interface WorkerJson {
  id: string;
  hostname: string;
  pid: number;
  queues: string[] | null;
  kinds: string[];
  concurrency: number;
  startedAt: string | null;
  lastSeenAt: string | null;
  runningJobIds: string[];
}

export interface ThroughputMinuteJson {
  minute: string;
  enqueued: number;
  succeeded: number;
  failed: number;
}
