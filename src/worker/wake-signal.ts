/**
 * A level-triggered wake-up: `notify()` before `wait()` is not lost, so a
 * notification that arrives while the worker is busy claiming makes the next
 * wait return at once instead of sleeping a whole poll interval.
 */
export class WakeSignal {
  private pending = false;
  private waiter: (() => void) | null = null;

  notify(): void {
    if (this.waiter) {
      const wake = this.waiter;
      this.waiter = null;
      wake();
    } else {
      this.pending = true;
    }
  }

  /** Resolves on the next notify (or a pending one), or after `timeoutMs`. */
  wait(timeoutMs: number): Promise<void> {
    if (this.pending) {
      this.pending = false;
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
