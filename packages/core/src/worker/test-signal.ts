/**
 * A point a part of the worker reports reaching, for tests to wait on
 * instead of sleeping (River's test signals are the model). Off until a
 * test calls `init()`: before that `signal()` does nothing, so a worker in
 * production keeps nothing. Once on, each value is kept, in order, until a
 * `wait()` takes it, so a value given before the test waits is not lost.
 */
export class TestSignal<T> {
  private values: T[] | null = null;
  private readonly waiters: Array<(value: T) => void> = [];

  /** True once `init()` was called. */
  get on(): boolean {
    return this.values !== null;
  }

  /** Start keeping values. Idempotent. */
  init(): void {
    this.values ??= [];
  }

  /** Report a value: to the oldest waiter, or kept for the next `wait()`. Does nothing before `init()`. */
  signal(value: T): void {
    if (this.values === null) return;
    const waiter = this.waiters.shift();
    if (waiter) waiter(value);
    else this.values.push(value);
  }

  /** The next value (the oldest kept, else the next given); rejects after `timeoutMs` without one, or when not initialised. */
  wait(timeoutMs = 10_000): Promise<T> {
    if (this.values === null) return Promise.reject(new Error("wait() on a test signal that was never init()"));
    if (this.values.length > 0) return Promise.resolve(this.values.shift()!);
    return new Promise<T>((resolve, reject) => {
      const waiter = (value: T) => {
        clearTimeout(timer);
        resolve(value);
      };
      const timer = setTimeout(() => {
        this.waiters.splice(this.waiters.indexOf(waiter), 1);
        reject(new Error(`no test signal within ${timeoutMs} ms`));
      }, timeoutMs);
      this.waiters.push(waiter);
    });
  }
}
