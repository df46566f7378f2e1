/**
 * Flush-while-in-flight batching, the one mechanism behind the worker's
 * outcome writes, progress writes and the client's wake-ups: items added
 * while a flush is in flight wait and go out together in the next one, so
 * a busy producer makes one statement per round trip instead of one per
 * item, and an idle one adds no delay. At most one flush runs at a time.
 *
 * `flush` must not throw: each user decides what a failed write means for
 * its items. `delay`, when given, is awaited before each flush (a turn of
 * the event loop to gather a batch, or the rest of a minimum interval
 * between writes); its signal aborts when `drain()` wants the flush now.
 * A delay that returns nothing lets the flush take its items at once,
 * within `add()`.
 */
export class Batcher<T> {
  private items: T[] = [];
  private flushing: Promise<void> | null = null;
  private hurry = new AbortController();

  constructor(
    private readonly flush: (items: T[]) => Promise<void>,
    private readonly delay?: (hurry: AbortSignal) => Promise<void> | undefined,
  ) {}

  /** Queue one item; it goes out with the next flush. */
  add(item: T): void {
    this.items.push(item);
    this.kick();
  }

  /** Take back the items waiting for the next flush (not those in flight), which then never flush. */
  discard(): T[] {
    return this.items.splice(0);
  }

  /** Flush what is waiting now (cutting its delay short), and resolve once everything added so far is flushed. */
  async drain(): Promise<void> {
    this.hurry.abort();
    try {
      while (this.flushing || this.items.length > 0) {
        this.kick();
        await this.flushing;
      }
    } finally {
      this.hurry = new AbortController();
    }
  }

  private kick(): void {
    if (this.flushing || this.items.length === 0) return;
    const hurry = this.hurry.signal;
    this.flushing = (async () => {
      const wait = hurry.aborted ? undefined : this.delay?.(hurry);
      if (wait) await wait;
      await this.flush(this.items.splice(0));
    })()
      // A flush that throws broke its contract; its items are gone either way, and the next flush must still run.
      .catch(() => {})
      .finally(() => {
        this.flushing = null;
        this.kick();
      });
  }
}

/** Resolves after `ms`, or at once when `signal` aborts (never rejects); nothing to wait for when `ms` has passed already. */
export function pause(ms: number, signal: AbortSignal): Promise<void> | undefined {
  if (ms <= 0 || signal.aborted) return undefined;
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done);
  });
}
