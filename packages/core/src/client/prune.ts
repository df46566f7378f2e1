import { RETENTION_BATCH_PAUSE_MS } from "../core/defaults.js";
import { ValidationError } from "../core/errors.js";
import { type PruneOptions, type PruneResult, resolveRetentionPolicy, type RetentionPolicy } from "../core/retention.js";
import type { RetentionStore } from "../store/retention-store.js";

/** Check `prune` options, refusing a bad one with a ValidationError that names it. */
export function resolvePruneOptions(options: PruneOptions): RetentionPolicy {
  return resolveRetentionPolicy(options, "", (message, field) => new ValidationError(message, [{ path: field, message }]));
}

/**
 * Delete in batches until a batch comes back short, pausing between batches.
 * A short batch means nothing more is old enough, or the rest is locked by
 * another prune (SKIP LOCKED), which will delete it.
 */
export async function pruneInBatches(store: RetentionStore, policy: RetentionPolicy, signal?: AbortSignal): Promise<PruneResult> {
  const drain = async (deleteBatch: () => Promise<number>): Promise<number> => {
    let total = 0;
    while (!signal?.aborted) {
      const deleted = await deleteBatch();
      total += deleted;
      if (deleted < policy.batchSize) break;
      await pause(RETENTION_BATCH_PAUSE_MS, signal);
    }
    return total;
  };
  const jobs = await drain(() => store.jobPruneFinished(policy.finishedMs, policy.batchSize));
  const deadLetters = await drain(() => store.deadLetterPrune(policy.deadLetterMs, policy.batchSize));
  const flows = await drain(() => store.flowPruneEmpty(policy.finishedMs, policy.batchSize));
  return { jobs, deadLetters, flows };
}

function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });
}
