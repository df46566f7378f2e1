import type { Logger } from "pino";
import { Batcher } from "../core/batcher.js";
import { ERROR_BACKOFF_MAX_MS, ERROR_BACKOFF_MIN_MS } from "../core/defaults.js";
import type { Job } from "../core/model.js";
import type { AttemptEnd, JobStore } from "../store/job-store.js";
import { isConnectionError, isTransientConflict } from "../store/pg-errors.js";
import type { WorkerMetrics } from "../metrics/worker-metrics.js";
import { sleep } from "./wake-signal.js";

/** Result of writing one attempt's end: written, or fenced (the job was no longer ours). */
export type WriteResult = { written: true; job: Job | null } | { written: false };

interface Pending<T> {
  entry: T;
  /** performance.now() after which our lease has surely expired; writing is pointless then. */
  giveUpAt: number;
  resolve(result: WriteResult): void;
}

type Success = { jobId: string; executionId: string; result: string | null };

/** One outcome waiting to be written: a success, or any other end of an attempt. */
type Outcome = { kind: "success"; pending: Pending<Success> } | { kind: "end"; pending: Pending<AttemptEnd> };

/**
 * Writes attempt outcomes in batches (core/batcher.ts): while one flush is
 * in flight, new outcomes queue up and go out together in the next, so a
 * busy worker makes one completion statement per round trip instead of one
 * per job, and an idle one adds no delay. Writes that fail because the database is away,
 * or that the server aborted to break a deadlock, are retried with back-off until the job's lease would have expired (after that
 * another worker may own it, and the reclaim sweep takes over).
 */
export class AttemptWriter {
  // Each flush waits one macrotask turn first, so outcomes that finish
  // together (a claimed batch of quick jobs) go out in one statement rather
  // than one alone and the rest after it.
  private readonly batcher = new Batcher<Outcome>(
    (outcomes) => this.flush(outcomes),
    () => new Promise<void>((resolve) => setImmediate(resolve)),
  );

  constructor(
    private readonly store: JobStore,
    /** The worker whose attempts these are, named in the record of each one it completes. */
    private readonly workerId: string,
    private readonly metrics: WorkerMetrics,
    private readonly log: Logger,
  ) {}

  complete(entry: Success, giveUpAt: number): Promise<WriteResult> {
    return new Promise((resolve) => this.batcher.add({ kind: "success", pending: { entry, giveUpAt, resolve } }));
  }

  end(entry: AttemptEnd, giveUpAt: number): Promise<WriteResult> {
    return new Promise((resolve) => this.batcher.add({ kind: "end", pending: { entry, giveUpAt, resolve } }));
  }

  /** Resolves once everything queued so far is written or given up. */
  drain(): Promise<void> {
    return this.batcher.drain();
  }

  private async flush(outcomes: Outcome[]): Promise<void> {
    const successes: Pending<Success>[] = [];
    const ends: Pending<AttemptEnd>[] = [];
    for (const outcome of outcomes) {
      if (outcome.kind === "success") successes.push(outcome.pending);
      else ends.push(outcome.pending);
    }
    await Promise.all([
      successes.length > 0 ? this.writeBatch("complete", successes, (batch) => this.writeSuccesses(batch)) : undefined,
      ends.length > 0 ? this.writeBatch("end", ends, (batch) => this.writeEnds(batch)) : undefined,
    ]);
  }

  private async writeSuccesses(batch: Pending<Success>[]): Promise<void> {
    const written = await this.store.jobComplete(this.workerId, batch.map((p) => p.entry));
    for (const pending of batch) {
      const ok = written.has(pending.entry.executionId);
      if (!ok) this.metrics.fencedWrites.inc({ operation: "complete" });
      pending.resolve(ok ? { written: true, job: null } : { written: false });
    }
  }

  private async writeEnds(batch: Pending<AttemptEnd>[]): Promise<void> {
    const moved = await this.store.jobEndAttempts(batch.map((p) => p.entry));
    const byId = new Map(moved.map((job) => [job.id, job]));
    for (const pending of batch) {
      const job = byId.get(pending.entry.jobId);
      if (!job) this.metrics.fencedWrites.inc({ operation: "end" });
      pending.resolve(job ? { written: true, job } : { written: false });
    }
  }

  /**
   * Write a batch, retrying connection failures with back-off. Any other
   * error is not the batch's fault as a whole: each entry is tried alone so
   * one bad row cannot sink the others, and one that still fails is given
   * up (logged) and left to the lease and the reclaim sweep.
   */
  private async writeBatch<T>(operation: string, batch: Pending<T>[], write: (batch: Pending<T>[]) => Promise<void>): Promise<void> {
    let backoff = ERROR_BACKOFF_MIN_MS;
    let remaining = batch;
    for (;;) {
      try {
        await write(remaining);
        return;
      } catch (error) {
        this.metrics.databaseErrors.inc({ operation });
        // A deadlock broken by the server (a completion releasing dependents
        // that another transaction also releases) undid the whole batch:
        // writing it again is the remedy, as for a lost connection.
        if (!isConnectionError(error) && !isTransientConflict(error)) {
          if (remaining.length > 1) {
            this.log.warn({ err: (error as Error).message, operation, count: remaining.length }, "outcome batch refused; writing its rows one by one");
            for (const single of remaining) await this.writeBatch(operation, [single], write);
          } else {
            this.log.error({ err: error, operation }, "could not record attempt outcome; the lease will expire and the job be reclaimed");
            remaining[0]?.resolve({ written: false });
          }
          return;
        }
        const now = performance.now();
        const expired = remaining.filter((p) => p.giveUpAt <= now);
        for (const pending of expired) pending.resolve({ written: false });
        remaining = remaining.filter((p) => p.giveUpAt > now);
        if (expired.length > 0) {
          this.log.warn({ count: expired.length, operation }, "gave up writing outcomes past their lease; the reclaim sweep will take them");
        }
        if (remaining.length === 0) return;
        this.log.warn({ err: (error as Error).message, operation, retryInMs: backoff }, "database unavailable; retrying outcome write");
        await sleep(backoff);
        backoff = Math.min(backoff * 2, ERROR_BACKOFF_MAX_MS);
      }
    }
  }
}
