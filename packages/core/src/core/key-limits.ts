import type { RateLimit } from "./queue-settings.js";

// Limits per key (docs/limits-and-fairness.md#limits-per-key): a limit key on
// each job, and per queue a default for every key plus overrides for single
// keys, enforced in the claim (routines/job-claim-by-key.ts).

/** The limits that apply to one key: each null when there is none. */
export interface KeyLimits {
  /** Most jobs of the key running at once, across every worker and host; null: no cap. */
  concurrency: number | null;
  /** Most starts of the key per fixed window; null: none. A throttle is `{ count: 1, intervalMs }`. */
  rateLimit: RateLimit | null;
}

/** One stored row of key limits: a queue's default for every key (`key` null) or one key's override. */
export interface KeyLimitSettings extends KeyLimits {
  /** The queue the limits apply in. */
  queue: string;
  /** The key overridden; null for the default that applies to every key without an override. */
  key: string | null;
  /** When the row last changed. */
  updatedAt: Date;
}

/**
 * Limits to change with `keyLimits.set`: an omitted field keeps its value,
 * null removes that limit. `throttleMs` is `rateLimit: { count: 1, intervalMs: throttleMs }`
 * (at most one start per window per key); give it or `rateLimit`, not both.
 */
export interface KeyLimitsInput {
  /** Most jobs of one key running at once; null removes the cap. Default: no cap. */
  concurrency?: number | null;
  /** Starts of one key per fixed window; null removes it. Default: none. */
  rateLimit?: RateLimit | null;
  /** At most one start per key per this many ms; null removes the rate limit. Default: none. */
  throttleMs?: number | null;
}

/** Which row a key's limits come from: its override, the queue's default, or none (the queue has no key limits). */
export type KeyLimitSource = "override" | "default" | "none";

/**
 * Why a key's waiting jobs are (not) running, most binding first:
 * `paused` (the queue is paused), `concurrency_limit` (the key runs as many
 * jobs as its cap allows), `rate_limit` (its window is full until
 * `window.endsAt`), `ready` (nothing holds it back: its jobs start as
 * workers free slots), `scheduled` (its jobs are not due yet), `idle` (no
 * job waiting).
 */
export type KeyState = "paused" | "concurrency_limit" | "rate_limit" | "ready" | "scheduled" | "idle";

/** What one key of a queue is doing now (`keyLimits.status`). */
export interface KeyStatus {
  /** The queue. */
  queue: string;
  /** The key. */
  key: string;
  /** The limits that apply to the key. */
  limits: KeyLimits;
  /** Where `limits` come from. */
  source: KeyLimitSource;
  /** Jobs of the key running now (all workers). */
  running: number;
  /** Jobs of the key due and waiting to start. */
  ready: number;
  /** Jobs of the key waiting for a later time (retries, delays). */
  scheduled: number;
  /** The key's current rate window; null when it has no rate limit or no window is open. */
  window: {
    /** When the window opened. */
    startedAt: Date;
    /** Jobs started in it. */
    count: number;
    /** When it closes. */
    endsAt: Date;
  } | null;
  /** What holds the key's jobs back, or that nothing does. */
  state: KeyState;
  /** `state` in a sentence. */
  reason: string;
}

/** One key among those with the most jobs waiting (`keyLimits.top`). */
export interface KeyLoad {
  /** The key. */
  key: string;
  /** Jobs of the key waiting (due or scheduled). */
  waiting: number;
  /** Jobs of the key running now. */
  running: number;
  /** The limits that apply to the key. */
  limits: KeyLimits;
  /** Where `limits` come from. */
  source: KeyLimitSource;
}

/** Keys held back by their limits in one queue right now (metrics). */
export interface KeyHeldBack {
  /** The queue. */
  queue: string;
  /** The key, at its concurrency cap or with its rate window full. */
  key: string;
  /** Its jobs due and waiting. */
  heldJobs: number;
}
