import type { KeyLimitSettings, KeyLoad, KeyStatus } from "../core/key-limits.js";
import type { KeyLimitSettingsJson, KeyLoadJson, KeyStatusJson } from "./key-limits-shapes.js";

// Limits per key as JSON, each shape defined once: a zod schema
// (key-limits-shapes.ts, the HTTP API's response schema) and the mapping
// from the library's type here, which `conveyor queues key… --json` prints
// too, so both say the same.

export type { KeyLimitSettingsJson, KeyLoadJson, KeyStatusJson } from "./key-limits-shapes.js";

/** A stored row of key limits as JSON. */
export function keyLimitSettingsJson(settings: KeyLimitSettings): KeyLimitSettingsJson {
  return {
    queue: settings.queue,
    key: settings.key,
    concurrency: settings.concurrency,
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
    concurrency: load.limits.concurrency,
    rateLimit: load.limits.rateLimit,
    source: load.source,
  };
}

/** A key's status as JSON. */
export function keyStatusJson(status: KeyStatus): KeyStatusJson {
  return {
    queue: status.queue,
    key: status.key,
    concurrency: status.limits.concurrency,
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
