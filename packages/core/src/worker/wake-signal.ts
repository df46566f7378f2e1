/**
 * A level-triggered wake-up: `notify()` before `wait()` is not lost, so a
 * notification that arrives while the worker is busy claiming makes the next
 * wait return at once instead of sleeping a whole poll interval.
 */
export class WakeSignal {
  private pending_ = false;
  private waiter: (() => void) | null = null;

  /** True when a notify() came with nobody waiting: the next wait() returns at once. */
  get pending(): boolean {
    return this.pending_;
  }

  notify(): void {
    if (this.waiter) {
      const wake = this.waiter;
      this.waiter = null;
      wake();
    } else {
      this.pending_ = true;
    }
  }

  /** Resolves on the next notify (or a pending one), or after `timeoutMs`. */
  wait(timeoutMs: number): Promise<void> {
    if (this.pending_) {
      this.pending_ = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waiter = null;
        resolve();
      }, timeoutMs);
      this.waiter = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * A shutdown's grace period: `over` resolves when it ends. It can be
 * shortened (a second signal) but not lengthened, and `end()` clears its
 * timer, so a finished shutdown leaves nothing that keeps the process alive.
 */
export class GracePeriod {
  readonly over: Promise<void>;
  private resolve!: () => void;
  private timer: NodeJS.Timeout | undefined;
  private endsAt: number;
  private ended = false;

  constructor(ms: number) {
    this.over = new Promise((resolve) => {
      this.resolve = resolve;
    });
    this.endsAt = performance.now() + ms;
    if (ms <= 0) this.end(); // a grace period of none is over at once
    else this.timer = setTimeout(() => this.end(), ms);
  }

  /** End it within `ms` from now, if that is sooner than it would. */
  shorten(ms: number): void {
    const endsAt = performance.now() + ms;
    if (endsAt >= this.endsAt) return;
    this.endsAt = endsAt;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.end(), Math.max(0, ms));
  }

  end(): void {
    this.ended = true;
    clearTimeout(this.timer);
    this.resolve();
  }

  /** True once it has ended (its time ran out, or end() was called). */
  get isOver(): boolean {
    return this.ended;
  }
}
