import { ENQUEUE_RACE_ROUNDS } from "../core/defaults.js";
import { ConflictError, IdempotencyConflictError } from "../core/errors.js";
import { type JobRequestFields, requestDifferences } from "../core/idempotency.js";
import type { JobInsertRow } from "../store/job-insert-row.js";

/**
 * Internal signal that an insert lost a race and must run again: the row it
 * conflicted with was gone when read (a competing idempotent insert rolled
 * back, a unique-key holder left its states between the two statements).
 */
export class RetryableEnqueue extends Error {}

/**
 * Run `attempt` again while it throws `RetryableEnqueue`, at most
 * `ENQUEUE_RACE_ROUNDS` (3) times in all; a race lost every time is a
 * `ConflictError`, never the internal signal.
 */
export async function withEnqueueRetry<T>(attempt: () => Promise<T>): Promise<T> {
  for (let round = 1; ; round++) {
    try {
      return await attempt();
    } catch (error) {
      if (!(error instanceof RetryableEnqueue)) throw error;
      if (round >= ENQUEUE_RACE_ROUNDS) {
        throw new ConflictError(
          `the enqueue met a job that was ending or being deleted, ${ENQUEUE_RACE_ROUNDS} times in a row (its idempotency or unique key changed hands meanwhile); send it again`,
          { cause: error },
        );
      }
    }
  }
}

/**
 * Refuse `row` when its idempotency key names an earlier request that was not
 * the same (core/idempotency.ts): `existing` is the job the key names, or the
 * earlier row of the same batch (then `existingJobId` is null).
 */
export function checkSameRequest(row: JobInsertRow & { idempotencyKey: string }, existing: JobRequestFields, existingJobId: string | null): void {
  const fields = requestDifferences(requestOf(row), existing);
  if (fields.length > 0) throw new IdempotencyConflictError(row.idempotencyKey, existingJobId, fields);
}

/** The compared fields of a prepared row (its payload is JSON text). */
export function requestOf(row: JobInsertRow): JobRequestFields {
  return { kind: row.kind, payload: JSON.parse(row.payload) as unknown, queue: row.queue, priority: row.priority, maxAttempts: row.maxAttempts };
}
