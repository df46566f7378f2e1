import { ConflictError, UniqueJobConflictError } from "../core/errors.js";
import type { Queryable } from "../store/db.js";
import type { JobInsertRow, UniqueInsert } from "../store/job-insert-row.js";
import type { JobStore } from "../store/job-store.js";
import type { EnqueuedJob } from "./enqueued-job.js";
import { checkSameRequest, RetryableEnqueue, withEnqueueRetry } from "./enqueue-race.js";

/**
 * Enqueue one job that carries a unique key. Precedence: an idempotency key
 * that already names a job answers first (that job, `created: false`, no
 * `unique` outcome, exactly as without a unique key); otherwise the unique
 * key settles with the job holding it, by `onConflict`.
 *
 * The insert and any replacement are one statement on the unique index. When
 * nothing was written, the job that answers is read by a second statement;
 * if the holder left its states in between (its key released), the whole
 * thing runs again: the next insert either creates or meets the new holder.
 */
export function insertUniqueJob(store: JobStore, row: JobInsertRow & { unique: UniqueInsert }, db?: Queryable): Promise<EnqueuedJob> {
  return withEnqueueRetry(() => settleOnce(store, row, db)).catch((error: unknown) => {
    // Out of rounds: the key changed hands on every one. Say so rather than leak the internal signal.
    if (error instanceof RetryableEnqueue) {
      throw new ConflictError(`unique key ${JSON.stringify(row.unique.key)} changed holders during the enqueue; try again`);
    }
    throw error;
  });
}

async function settleOnce(store: JobStore, row: JobInsertRow & { unique: UniqueInsert }, db?: Queryable): Promise<EnqueuedJob> {
  const { unique } = row;
  const written = await store.jobInsertUnique(row, db);
  if (written) {
    return written.id === row.id ? { ...written, created: true, unique: "created" } : { ...written, created: false, unique: "replaced" };
  }
  if (row.idempotencyKey !== null) {
    const [replay] = await store.jobGetByIdempotencyKeys(row.tenant, [row.idempotencyKey], db);
    if (replay) {
      checkSameRequest({ ...row, idempotencyKey: row.idempotencyKey }, replay.job, replay.job.id);
      return { ...replay.job, created: false };
    }
  }
  const holder = await store.jobGetByUniqueKey(row.tenant, unique.key, db);
  if (!holder) throw new RetryableEnqueue();
  if (unique.onConflict === "drop") throw new UniqueJobConflictError(unique.key, holder.id);
  if (unique.onConflict === "replace") {
    if (holder.kind !== row.kind) {
      throw new UniqueJobConflictError(
        unique.key,
        holder.id,
        `unique key ${JSON.stringify(unique.key)} is held by job ${holder.id} of kind ${JSON.stringify(holder.kind)}; replace needs the same kind`,
      );
    }
    // It was running when the insert met it, and has been handed back since: replace it after all.
    if (holder.status !== "running") throw new RetryableEnqueue();
  }
  return { ...holder, created: false, unique: "kept" };
}
