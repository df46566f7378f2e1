import { NO_DEADLINE } from "../core/defaults.js";
import type { Job } from "../core/model.js";
import type { RequeueAction } from "../core/requeues.js";
import type { StepRecord } from "../core/steps.js";
import { RECORD_TRANSITIONS, type RecordKind, type RecordState } from "../core/step-transitions.js";
import type { Pool, Queryable } from "./db.js";
import type { Queries } from "./queries.js";
import { rowToJob } from "./rows.js";
import { runQuery } from "./run-query.js";
import { withTransaction } from "./transaction.js";

/** A job's record of one step, sleep or wait, as a running attempt reads it: its state is one of its kind's. */
export type LoadedStep = {
  [K in RecordKind]: {
    name: string;
    kind: K;
    state: RecordState<K>;
    /** A completed step's result, or a received event's payload. */
    result: unknown;
    /** A sleep's wake time or a wait's deadline, in ms from when it was read (database clock); null when none. */
    wakeInMs: number | null;
  };
}[RecordKind];

/** What suspends an attempt (StepStore.suspend). */
export interface Suspension {
  jobId: string;
  executionId: string;
  workerId: string;
  tenant: string;
  /** The sleep's or wait's name. */
  name: string;
  kind: "sleep" | "wait";
  /** Wake at this time (a sleep until a Date, a wait without deadline), or after `inMs`. */
  at: Date | null;
  inMs: number | null;
  /** For a wait: the event and key it matches. */
  event: string | null;
  key: string | null;
}

/** How a suspension went: the job moved (sleeping, or cancelled), an event was already there, or fenced. */
export type SuspendResult = { kind: "suspended"; job: Job } | { kind: "received"; payload: unknown } | { kind: "fenced" };

/** What a rerun from a step did. */
export interface RerunResult {
  /** The job's state before; null when there is no such job (in this tenant). */
  previousStatus: Job["status"] | null;
  stepFound: boolean;
  /** Records forgotten: the step's and every later one's. */
  forgotten: number;
  /** The job as the rerun moved it; null when it did not. */
  job: Job | null;
}

/**
 * The statements of durable execution (sql/steps.ts): what a running
 * attempt records, suspensions, events, the waker, and reruns.
 */
export class StepStore {
  constructor(
    private readonly pool: Pool,
    private readonly q: Queries,
  ) {}

  /** Every record of a job, read once by an attempt that uses steps. */
  async jobStepsLoad(jobId: string): Promise<LoadedStep[]> {
    const { rows } = await runQuery(this.pool, this.q.jobStepsLoad, [jobId]);
    return rows.map((row) => ({
      name: row.name,
      kind: row.kind,
      state: row.state,
      result: row.result,
      wakeInMs: row.wake_in_ms === null ? null : Number(row.wake_in_ms),
    }));
  }

  /**
   * Record a step's end, fenced; on `tx` when given (a transactional step).
   * Returns the stored result, or undefined when fenced.
   */
  async jobStepRecord(
    record: { jobId: string; executionId: string; name: string; state: RecordState<"step">; result: string | null; error: string | null; ranMs: number },
    tx: Queryable = this.pool,
  ): Promise<{ result: unknown } | undefined> {
    const { rows } = await runQuery(tx, this.q.jobStepRecord, [
      record.jobId,
      record.executionId,
      record.name,
      record.state,
      record.result,
      record.error,
      record.ranMs,
    ]);
    return rows.length > 0 ? { result: rows[0].result } : undefined;
  }

  /**
   * Suspend an attempt on a sleep or a wait (jobSuspend). A wait first takes
   * the event lock and looks for an event already sent: when there is one,
   * the wait receives it and the attempt goes on.
   */
  jobSuspend(s: Suspension): Promise<SuspendResult> {
    return withTransaction(this.pool, async (tx) => {
      if (s.kind === "wait") {
        await runQuery(tx, this.q.eventLock, [s.tenant, s.event, s.key]);
        const { rows: matched } = await runQuery(tx, this.q.eventMatch, [s.jobId, s.event, s.key]);
        if (matched.length > 0) {
          const { rows } = await runQuery(tx, this.q.jobWaitReceive, [s.jobId, s.executionId, s.name, matched[0].id, s.event, s.key]);
          return rows.length > 0 ? { kind: "received", payload: rows[0].result } : { kind: "fenced" };
        }
      }
      const { rows } = await runQuery(tx, this.q.jobSuspend, [
        s.jobId,
        s.executionId,
        s.name,
        s.kind,
        s.workerId,
        s.at,
        s.inMs,
        s.event,
        s.key,
      ]);
      return rows.length > 0 ? { kind: "suspended", job: rowToJob(rows[0]) } : { kind: "fenced" };
    });
  }

  /**
   * A wait's deadline passed: record it timed out. Returns null for a
   * timeout, the event's payload when one was delivered first, or undefined
   * when fenced.
   */
  async jobWaitTimeout(jobId: string, executionId: string, name: string): Promise<{ payload: unknown } | null | undefined> {
    const { rows } = await runQuery(this.pool, this.q.jobWaitTimeout, [jobId, executionId, name]);
    if (rows.length > 0) return null;
    const records = await this.jobStepsLoad(jobId);
    const wait = records.find((record) => record.name === name);
    return wait?.state === RECORD_TRANSITIONS.wait.event_received.to ? { payload: wait.result } : undefined;
  }

  /** Store an event and wake the jobs waiting for it; returns its id and the jobs woken. */
  eventSend(tenant: string, event: string, key: string, payload: string | null): Promise<{ id: string; jobIds: string[] }> {
    return withTransaction(this.pool, async (tx) => {
      await runQuery(tx, this.q.eventLock, [tenant, event, key]);
      const { rows } = await runQuery(tx, this.q.eventSend, [tenant, event, key, payload]);
      return { id: rows[0].id, jobIds: rows[0].job_ids };
    });
  }

  /** Queue up to `limit` sleeping jobs whose time has come; returns them. */
  async jobWakeSleeping(limit: number): Promise<Array<{ id: string; kind: string }>> {
    const { rows } = await runQuery(this.pool, this.q.jobWakeSleeping, [limit]);
    return rows;
  }

  /** Rerun a job from one of its steps, or (step null) resume it keeping every record (jobRerunFromStep), recording which it was. */
  async jobRerunFromStep(jobId: string, step: string | null, tenant: string | null): Promise<RerunResult> {
    const action: RequeueAction = step === null ? "resume" : "rerun";
    const { rows } = await runQuery(this.pool, this.q.jobRerunFromStep, [jobId, step, tenant, action]);
    const row = rows[0];
    if (!row) return { previousStatus: null, stepFound: false, forgotten: 0, job: null };
    return { previousStatus: row.previous_status, stepFound: row.step_found, forgotten: row.forgotten, job: row.id === null ? null : rowToJob(row) };
  }

  /** Open waits for an event, all tenants, counted up to `limit`. */
  async waitsOpenCount(limit: number): Promise<number> {
    const { rows } = await runQuery(this.pool, this.q.waitsOpenCount, [limit]);
    return rows[0].n;
  }

  /**
   * A job's records in the order they were first made; empty when the job
   * has none or is not in `tenant`. A wait without a deadline has `wakeAt` null.
   */
  async jobStepsList(jobId: string, tenant: string | null): Promise<StepRecord[]> {
    const { rows } = await runQuery(this.pool, this.q.jobStepsList, [jobId, tenant]);
    return rows.map((row) => ({
      name: row.name,
      seq: row.seq,
      kind: row.kind,
      state: row.state,
      result: row.result,
      error: row.error,
      attempt: row.attempt,
      executionId: row.execution_id,
      startedAt: row.started_at,
      finishedAt: row.finished_at,
      // A wait without a deadline is stored until NO_DEADLINE (the job's run_at needs a time); it has none.
      wakeAt: row.wake_at !== null && row.wake_at >= NO_DEADLINE ? null : row.wake_at,
      event: row.event,
      eventKey: row.event_key,
      eventId: row.event_id,
    }));
  }
}
