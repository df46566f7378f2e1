import { HISTORY_DETACH_LOCK_TIMEOUT_MS, RETENTION_BATCH_PAUSE_MS } from "../core/defaults.js";
import { ValidationError } from "../core/errors.js";
import {
  type PruneOptions,
  type PruneResult,
  type ResolvedKindRetention,
  resolveRetentionPolicy,
  type RetentionPolicy,
} from "../core/retention.js";
import type { RetentionStore } from "../store/retention-store.js";
import { checkKnownFields } from "../core/validate.js";

/** Check `prune` options, refusing a bad one with a ValidationError that names it. */
export function resolvePruneOptions(options: PruneOptions): RetentionPolicy {
  checkKnownFields(options, { finishedMs: true, deadLetterMs: true, eventsMs: true, batchSize: true, signal: true }, "a prune option");
  return resolveRetentionPolicy(options, "", (message, field) => new ValidationError(message, [{ path: field, message }]));
}

/** A job kind whose definition sets its own retention ages. */
export interface KindAges {
  kind: string;
  retention: ResolvedKindRetention | null;
}

/**
 * Delete in batches until a batch comes back short, pausing between batches.
 * A short batch means nothing more is old enough, or the rest is locked by
 * another prune (SKIP LOCKED), which will delete it. A kind of `kinds`
 * whose definition sets an age of its own is pruned by that age, in
 * batches of its own, and left out of the pass by `policy`'s age.
 */
export async function pruneInBatches(
  store: RetentionStore,
  policy: RetentionPolicy,
  kinds: Iterable<KindAges> = [],
  signal?: AbortSignal,
): Promise<PruneResult> {
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
  const finishedOwn: Array<[string, number]> = [];
  const deadOwn: Array<[string, number]> = [];
  for (const { kind, retention } of kinds) {
    if (retention?.finishedMs != null) finishedOwn.push([kind, retention.finishedMs]);
    if (retention?.deadLetterMs != null) deadOwn.push([kind, retention.deadLetterMs]);
  }
  const keptLonger = finishedOwn.filter(([, ms]) => ms > policy.finishedMs).map(([kind]) => kind);
  let jobs = signal?.aborted ? 0 : await store.historyDropBefore(policy.finishedMs, keptLonger, HISTORY_DETACH_LOCK_TIMEOUT_MS);
  jobs += await drain(() => store.jobPruneFinished(policy.finishedMs, policy.batchSize, finishedOwn.map(([kind]) => kind)));
  for (const [kind, ms] of finishedOwn) jobs += await drain(() => store.jobPruneFinishedOfKind(ms, policy.batchSize, kind));
  let deadLetters = await drain(() => store.deadLetterPrune(policy.deadLetterMs, policy.batchSize, { except: deadOwn.map(([kind]) => kind) }));
  for (const [kind, ms] of deadOwn) deadLetters += await drain(() => store.deadLetterPrune(ms, policy.batchSize, { only: kind }));
  const flows = await drain(() => store.flowPruneEmpty(policy.finishedMs, policy.batchSize));
  const events = await drain(() => store.eventPrune(policy.eventsMs, policy.batchSize));
  return { jobs, deadLetters, flows, events };
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
