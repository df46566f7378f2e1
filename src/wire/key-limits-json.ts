import type { KeyLimitSettings, KeyLoad, KeyStatus } from "../core/key-limits.js";
import type { RateLimit } from "../core/queue-settings.js";

// Limits per key as JSON: the bodies of the HTTP API's key routes
// (http/key-limit-schemas.ts states their schemas) and what `conveyor
// queues key… --json` prints, so both say the same.

/** A stored row of key limits as JSON. */
export interface KeyLimitSettingsJson {
  queue: string;
  key: string | null;
  concurrencyLimit: number | null;
  rateLimit: RateLimit | null;
  updatedAt: string;
}

/** One busy key as JSON. */
export interface KeyLoadJson {
  key: string;
  waiting: number;
  running: number;
  concurrencyLimit: number | null;
  rateLimit: RateLimit | null;
  source: KeyLoad["source"];
}

/** What a key is doing, as JSON. */
export interface KeyStatusJson {
  queue: string;
  key: string;
  concurrencyLimit: number | null;
  rateLimit: RateLimit | null;
  source: KeyStatus["source"];
  running: number;
  ready: number;
  scheduled: number;
  window: { startedAt: string; count: number; endsAt: string } | null;
  state: KeyStatus["state"];
  reason: string;
}

/** A stored row of key limits as JSON. */
export function keyLimitSettingsJson(settings: KeyLimitSettings): KeyLimitSettingsJson {
  return {
    queue: settings.queue,
    key: settings.key,
    concurrencyLimit: settings.concurrency,
    rateLimit: settings.rateLimit,
    updatedAt: settings.updatedAt.toISOString(),
  };
}

/** A busy key as JSON. */
export function keyLoadJson(load: KeyLoad): KeyLoadJson {
  return {
    key: load.key,
    waiting: load.waiting,
    running: load.running,
    concurrencyLimit: load.limits.concurrency,
    rateLimit: load.limits.rateLimit,
    source: load.source,
  };
}

/** A key's status as JSON. */
export function keyStatusJson(status: KeyStatus): KeyStatusJson {
  return {
    queue: status.queue,
    key: status.key,
    concurrencyLimit: status.limits.concurrency,
    rateLimit: status.limits.rateLimit,
    source: status.source,
    running: status.running,
    ready: status.ready,
    scheduled: status.scheduled,
    window:
      status.window === null
        ? null
        : { startedAt: status.window.startedAt.toISOString(), count: status.window.count, endsAt: status.window.endsAt.toISOString() },
    state: status.state,
    reason: status.reason,
  };
}
