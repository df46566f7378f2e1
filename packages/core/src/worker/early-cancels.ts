/** Execution ids kept at most: a few seconds of cancels across the whole fleet. */
const KEPT = 1_024;

/**
 * Cancels notified for attempts this worker does not hold: another worker's
 * (the notification goes to every worker of the schema), or one of its own
 * whose claim committed but whose answer has not been read yet. The claim
 * loop checks each attempt it launches here, so a cancel that arrived in that
 * gap is not left to the next heartbeat. Bounded: the oldest ids go first.
 */
export class EarlyCancels {
  private readonly ids = new Set<string>();

  /** Keep `executionId` for a launch that may follow. */
  note(executionId: string): void {
    this.ids.add(executionId);
    if (this.ids.size > KEPT) this.ids.delete(this.ids.values().next().value!);
  }

  /** True (once) when a cancel was notified for `executionId`. */
  take(executionId: string): boolean {
    return this.ids.delete(executionId);
  }
}
