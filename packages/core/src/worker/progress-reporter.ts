import type { Logger } from "pino";
import { Batcher, pause } from "../core/batcher.js";
import { encodeProgress } from "../core/progress.js";
import type { HandlerStore } from "../store/handler-store.js";

/** One reported value and the caller waiting to hear whether it (or a newer one) was stored. */
interface Report {
  json: string;
  resolve(stored: boolean): void;
}

/**
 * `ctx.progress()` for one attempt. A handler may report progress in a
 * tight loop, so writes are coalesced (core/batcher.ts): at most one is in
 * flight, at most one per `intervalMs`, and of the values reported
 * meanwhile only the latest is written. Every call's promise resolves with
 * whether its value, or a newer one that replaced it, was stored; it never
 * rejects (a bad value throws at once, before anything is queued).
 * `close()` writes the last value before the attempt ends; later calls
 * resolve false.
 */
export class ProgressReporter {
  private readonly batcher: Batcher<Report>;
  private lastWriteAt = Number.NEGATIVE_INFINITY;
  private closed = false;

  constructor(
    private readonly store: HandlerStore,
    private readonly jobId: string,
    private readonly executionId: string,
    intervalMs: number,
    private readonly log: Logger,
    /** Called when a write matched no row, or was not sent because the lease's local deadline had passed: the job may no longer be this attempt's. */
    private readonly onFenced: () => void,
    /** performance.now() by which the attempt's lease has surely expired (Attempt.leaseDeadline); no write is sent after it. */
    private readonly leaseDeadline: () => number = () => Number.POSITIVE_INFINITY,
  ) {
    this.batcher = new Batcher(
      (reports) => this.write(reports),
      (hurry) => pause(this.lastWriteAt + intervalMs - performance.now(), hurry),
    );
  }

  /** Queue `value` (validated now: throws `ValidationError`); resolves whether it (or a newer value) was stored. */
  report(value: unknown): Promise<boolean> {
    const json = encodeProgress(value);
    if (this.closed) return Promise.resolve(false);
    return new Promise<boolean>((resolve) => this.batcher.add({ json, resolve }));
  }

  /** Write what is pending now, ignoring the interval, and wait for every write; the reporter stays open. */
  settle(): Promise<void> {
    return this.batcher.drain();
  }

  /** The attempt is ending: write the last value (unless `discard`), then refuse further reports. */
  async close(discard = false): Promise<void> {
    this.closed = true;
    if (discard) for (const report of this.batcher.discard()) report.resolve(false);
    await this.batcher.drain();
  }

  private async write(reports: Report[]): Promise<void> {
    this.lastWriteAt = performance.now();
    let stored = false;
    if (this.leaseDeadline() <= performance.now()) {
      // Another worker may own the job by now: a write fenced only by the execution id could still land.
      this.onFenced();
      for (const report of reports) report.resolve(false);
      return;
    }
    try {
      stored = await this.store.jobProgressUpdate(this.jobId, this.executionId, reports.at(-1)!.json);
      if (!stored) this.onFenced();
    } catch (error) {
      // Progress is informative: a failed write is logged and reported as
      // false, never thrown into the handler.
      this.log.warn({ err: (error as Error).message }, "could not store job progress");
    }
    for (const report of reports) report.resolve(stored);
  }
}
