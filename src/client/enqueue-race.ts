import { ENQUEUE_RACE_ROUNDS } from "../core/defaults.js";
import { ConflictError } from "../core/errors.js";

/**
 * Internal signal that an insert lost a race and must run again: the row it
 * conflicted with was gone when read (a competing idempotent insert rolled
 * back, a unique-key holder left its states between the two statements).
 */
export class RetryableEnqueue extends Error {}

/** Run `attempt` again while it throws `RetryableEnqueue`, at most `ENQUEUE_RACE_ROUNDS` (3) times in all. */
export async function withEnqueueRetry<T>(attempt: () => Promise<T>): Promise<T> {
  for (let round = 1; ; round++) {
    try {
      return await attempt();
    } catch (error) {
      if (!(error instanceof RetryableEnqueue) || round >= ENQUEUE_RACE_ROUNDS) throw error;
    }
  }
}

/** The idempotency key was already used for a different job. */
export function idempotencyConflict(key: string): ConflictError {
  return new ConflictError(
    `idempotency key ${JSON.stringify(key)} was already used for a different job (kind or payload differ)`,
  );
}
