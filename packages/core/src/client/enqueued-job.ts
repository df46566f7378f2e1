import type { Job } from "../core/model.js";
import type { UniqueOutcome } from "../core/unique.js";

// What an enqueue answers, in a module of its own: enqueue.ts and
// enqueue-unique.ts both return it, and enqueue.ts calls enqueue-unique.ts,
// so the type cannot live in either without an import cycle.

/**
 * The job as stored, and whether this call created it (false: an idempotency
 * key or a unique key returned an existing job). `unique` is what the unique
 * key did ("created", "kept", "replaced"); absent when the enqueue had no
 * `unique` option, or when its idempotency key answered first.
 */
export type EnqueuedJob<P = unknown> = Job<P> & {
  /** True when this call inserted the job; false when a key answered with an existing one. */
  created: boolean;
  /** What the `unique` option did; absent without it, or when the idempotency key answered first. */
  unique?: UniqueOutcome;
};
