import type { Logger } from "pino";
import { Batcher } from "../core/batcher.js";
import { ERROR_BACKOFF_MAX_MS, ERROR_BACKOFF_MIN_MS } from "../core/defaults.js";
import type { Job } from "../core/model.js";
import type { AttemptEnd, JobStore } from "../store/job-store.js";
import { isConnectionError, isTransientConflict } from "../store/pg-errors.js";
import type { MetricRecorders } from "../metrics/worker-metrics.js";
import { sleep } from "./wake-signal.js";

/** Result of writing one attempt's end: written, or fenced (the job was no longer ours). */
export type WriteResult = { written: true; job: Job | null } | { written: false };

/** The two results of a success's write: it carries no job, so they are shared rather than made per attempt. */
const SUCCESS_WRITTEN: WriteResult = Object.freeze({ written: true, job: null });
const FENCED: WriteResult = Object.freeze({ written: false });

/**
 * One outcome waiting to be written, with what its write needs: a success
 * carries its fields itself (the store's jobComplete reads them from it), so
 * queuing one makes this object and its promise, nothing more.
 */
interface Pending {
  /** performance.now() after which our lease has surely expired; writing is pointless then. */
  giveUpAt: number;
  resolve(result: WriteResult): void;
}
interface PendingSuccess extends Pending {
  kind: "success";
  jobId: string;
  executionId: string;
  result: string | null;
  keep: boolean;
}
interface PendingEnd extends Pending {
  kind: "end";
  entry: AttemptEnd;
}
type Outcome = PendingSuccess | PendingEnd;

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
    private readonly metrics: MetricRecorders,
    private readonly log: Logger,
  ) {}

  /** Write a success: `result` is the handler's value as JSON text, or null; `keep`: whether the job stays in history. */
  complete(jobId: string, executionId: string, result: string | null, keep: boolean, giveUpAt: number): Promise<WriteResult> {
    return new Promise((resolve) => this.batcher.add({ kind: "success", jobId, executionId, result, keep, giveUpAt, resolve }));
  }

  end(entry: AttemptEnd, giveUpAt: number): Promise<WriteResult> {
    return new Promise((resolve) => this.batcher.add({ kind: "end", entry, giveUpAt, resolve }));
  }

  /** Resolves once everything queued so far is written or given up. */
  drain(): Promise<void> {
    return this.batcher.drain();
  }

  private async flush(outcomes: Outcome[]): Promise<void> {
    const successes: PendingSuccess[] = [];
    const ends: PendingEnd[] = [];
    for (const outcome of outcomes) {
      if (outcome.kind === "success") successes.push(outcome);
      else ends.push(outcome);
    }
    await Promise.all([
      successes.length > 0 ? this.writeBatch("complete", successes, (batch) => this.writeSuccesses(batch)) : undefined,
      ends.length > 0 ? this.writeBatch("end", ends, (batch) => this.writeEnds(batch)) : undefined,
    ]);
  }

  private async writeSuccesses(batch: PendingSuccess[]): Promise<void> {
    const written = await this.store.jobComplete(batch);
    for (const pending of batch) {
      const ok = written.has(pending.executionId);
      if (!ok) this.metrics.fencedWrites.inc({ operation: "complete" });
      pending.resolve(ok ? SUCCESS_WRITTEN : FENCED);
    }
  }

  private async writeEnds(batch: PendingEnd[]): Promise<void> {
    const moved = await this.store.jobEndAttempts(batch.map((p) => p.entry));
    const byId = new Map(moved.map((job) => [job.id, job]));
    for (const pending of batch) {
      const job = byId.get(pending.entry.jobId);
      if (!job) this.metrics.fencedWrites.inc({ operation: "end" });
      pending.resolve(job ? { written: true, job } : FENCED);
    }
  }

  /**
   * Write a batch, retrying connection failures with back-off. Any other
   * error is not the batch's fault as a whole: each entry is tried alone so
   * one bad row cannot sink the others, and one that still fails is given
   * up (logged) and left to the lease and the reclaim sweep.
   */
  private async writeBatch<T extends Pending>(operation: string, batch: T[], write: (batch: T[]) => Promise<void>): Promise<void> {
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
            remaining[0]?.resolve(FENCED);
          }
          return;
        }
        const now = performance.now();
        const expired = remaining.filter((p) => p.giveUpAt <= now);
        for (const pending of expired) pending.resolve(FENCED);
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
