/**
 * A task every worker runs on its own, with no leader: reclaiming expired
 * leases, pruning, refreshing its registration. Runs are jittered (each wait
 * is the interval ±25%) so a fleet started together does not run in
 * lockstep. One run at a time: `runNow()` during a run joins it. A run that
 * fails is told to `onError`, and the next comes on schedule. `stop()`
 * clears the timer and waits for a run in flight.
 */
export class Periodic<T> {
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;
  private running: Promise<T> | null = null;

  constructor(
    private readonly task: () => Promise<T>,
    private readonly intervalMs: number,
    private readonly onError: (error: unknown) => void,
  ) {}

  /** Start; the first run comes after `firstDelayMs` (jittered too), the others every interval. */
  start(firstDelayMs = this.intervalMs): void {
    this.schedule(firstDelayMs);
  }

  /** Run now, or join the run in progress. */
  runNow(): Promise<T> {
    this.running ??= this.task().finally(() => {
      this.running = null;
    });
    return this.running;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.running?.catch(() => {});
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      void this.runNow()
        .catch(this.onError)
        .finally(() => this.schedule(this.intervalMs));
    }, delayMs * (0.75 + Math.random() * 0.5));
  }
}
