import { Batcher } from "../core/batcher.js";

/**
 * Sends the wake-up for jobs the store inserted and committed on its own
 * pool while another of its inserts was in flight, after their commit
 * (JobStore.inserting and routines/jobs-notify-ready.ts say why not inside it). Queues
 * named while one notification is in flight go out together in the next
 * (core/batcher.ts), so a stream of enqueues costs one small statement per
 * round trip, not one per job, and the enqueue that named a queue never
 * waits for it.
 *
 * A wake-up that fails is dropped: workers poll as well, so the job waits at
 * most one poll interval, as when a LISTEN connection is briefly down.
 */
export class QueueWaker {
  private readonly batcher: Batcher<string>;

  constructor(send: (queues: string[]) => Promise<unknown>) {
    this.batcher = new Batcher(async (queues) => {
      await send([...new Set(queues)]).catch(() => {});
    });
  }

  wake(queue: string): void {
    this.batcher.add(queue);
  }

  /** Resolves once every queue named so far has been sent (or given up). */
  drain(): Promise<void> {
    return this.batcher.drain();
  }
}
