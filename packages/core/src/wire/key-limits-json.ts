import { z } from "zod";
import type { KeyLimitSettings, KeyLoad, KeyStatus } from "../core/key-limits.js";

// Limits per key as JSON, each shape defined once: a zod schema (the HTTP
// API's response schema) and the mapping from the library's type, which
// `conveyor queues key… --json` prints too, so both say the same.

const rateLimitShape = z.object({ count: z.number().int(), intervalMs: z.number().int() });

const limits = {
  concurrency: z.number().int().nullable(),
  rateLimit: rateLimitShape.nullable(),
};

/** A stored row of key limits as JSON. */
export const keyLimitSettingsShape = z.object({
  queue: z.string(),
  key: z.string().nullable().describe("null: the queue's default for every key"),
  ...limits,
  updatedAt: z.string().describe("ISO 8601"),
});

const source = z.enum(["override", "default", "none"]).describe("where the key's limits come from");

/** One busy key as JSON. */
export const keyLoadShape = z.object({ key: z.string(), waiting: z.number().int(), running: z.number().int(), ...limits, source });

/** What a key is doing, as JSON. */
export const keyStatusShape = z.object({
  queue: z.string(),
  key: z.string(),
  ...limits,
  source,
  running: z.number().int(),
  ready: z.number().int().describe("due and waiting to start"),
  scheduled: z.number().int().describe("waiting for a later run time"),
  window: z
    .object({ startedAt: z.string(), count: z.number().int(), endsAt: z.string() })
    .nullable()
    .describe("the key's open rate window, if any"),
  state: z.enum(["paused", "concurrency_limit", "rate_limit", "ready", "scheduled", "idle"]).describe("what holds the key's jobs back"),
  reason: z.string().describe("the state in a sentence"),
});

/** A stored row of key limits, as JSON. */
export type KeyLimitSettingsJson = z.output<typeof keyLimitSettingsShape>;
/** One busy key, as JSON. */
export type KeyLoadJson = z.output<typeof keyLoadShape>;
/** What a key is doing, as JSON. */
export type KeyStatusJson = z.output<typeof keyStatusShape>;

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
