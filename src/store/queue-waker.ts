/**
 * Sends the wake-up for jobs the store inserted and committed on its own
 * pool while another of its inserts was in flight, after their commit
 * (JobStore.inserting and migration 009 say why not inside it). Queues
 * named while one notification is in flight go out together in the next, so
 * a stream of enqueues costs one small statement per round trip, not one
 * per job, and the enqueue that named a queue never waits for it.
 *
 * A wake-up that fails is dropped: workers poll as well, so the job waits at
 * most one poll interval, as when a LISTEN connection is briefly down.
 */
export class QueueWaker {
  private pending = new Set<string>();
  private flushing: Promise<void> | null = null;

  constructor(private readonly send: (queues: string[]) => Promise<unknown>) {}

  wake(queue: string): void {
    this.pending.add(queue);
    this.flushing ??= this.flush();
  }

  /** Resolves once every queue named so far has been sent (or given up). */
  async drain(): Promise<void> {
    while (this.flushing) await this.flushing;
  }

  private async flush(): Promise<void> {
    try {
      while (this.pending.size > 0) {
        const queues = [...this.pending];
        this.pending.clear();
        await this.send(queues).catch(() => {});
      }
    } finally {
      this.flushing = null;
    }
  }
}
