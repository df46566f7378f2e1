import type { Logger } from "pino";
import { encodeProgress } from "../core/progress.js";
import type { HandlerStore } from "../store/handler-store.js";

interface Pending {
  json: string;
  /** Callers whose value this write carries or supersedes. */
  waiters: Array<(stored: boolean) => void>;
}

/**
 * `ctx.progress()` for one attempt. A handler may report progress in a
 * tight loop, so writes are coalesced: at most one is in flight, at most one
 * per `intervalMs`, and a value reported while another waits replaces it
 * (the latest wins). Every call's promise resolves with whether its value,
 * or a newer one that replaced it, was stored; it never rejects (a bad value
 * throws at once, before anything is queued). `flush()` writes the last
 * value before the attempt ends; later calls resolve false.
 */
export class ProgressReporter {
  private pending: Pending | null = null;
  private inFlight: Promise<void> | null = null;
  private timer: NodeJS.Timeout | null = null;
  private lastWriteAt = Number.NEGATIVE_INFINITY;
  private closed = false;

  constructor(
    private readonly store: HandlerStore,
    private readonly jobId: string,
    private readonly executionId: string,
    private readonly intervalMs: number,
    private readonly log: Logger,
    /** Called when a write matched no row: the job is no longer this attempt's. */
    private readonly onFenced: () => void,
  ) {}

  /** Queue `value` (validated now: throws `ValidationError`); resolves whether it (or a newer value) was stored. */
  report(value: unknown): Promise<boolean> {
    const json = encodeProgress(value);
    if (this.closed) return Promise.resolve(false);
    return new Promise<boolean>((resolve) => {
      if (this.pending) {
        this.pending.json = json;
        this.pending.waiters.push(resolve);
      } else {
        this.pending = { json, waiters: [resolve] };
      }
      this.schedule(false);
    });
  }

  /** Write what is pending now, ignoring the interval, and wait for every write; the reporter stays open. */
  async settle(): Promise<void> {
    while (this.inFlight || this.pending) {
      if (!this.inFlight) this.schedule(true);
      await this.inFlight;
    }
  }

  /** The attempt is ending: write the last value (unless `discard`), then refuse further reports. */
  async close(discard = false): Promise<void> {
    this.closed = true;
    if (discard && this.pending) {
      for (const resolve of this.pending.waiters) resolve(false);
      this.pending = null;
    }
    await this.settle();
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  private schedule(now: boolean): void {
    if (this.inFlight || !this.pending) return;
    const wait = this.lastWriteAt + this.intervalMs - performance.now();
    if (wait > 0 && !now && !this.closed) {
      this.timer ??= setTimeout(() => {
        this.timer = null;
        this.schedule(false);
      }, wait);
      return;
    }
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const batch = this.pending;
    this.pending = null;
    this.lastWriteAt = performance.now();
    this.inFlight = this.write(batch).finally(() => {
      this.inFlight = null;
      this.schedule(this.closed);
    });
  }

  private async write(batch: Pending): Promise<void> {
    let stored = false;
    try {
      stored = await this.store.jobProgressUpdate(this.jobId, this.executionId, batch.json);
      if (!stored) this.onFenced();
    } catch (error) {
      // Progress is informative: a failed write is logged and reported as
      // false, never thrown into the handler.
      this.log.warn({ err: (error as Error).message }, "could not store job progress");
    }
    for (const resolve of batch.waiters) resolve(stored);
  }
}
