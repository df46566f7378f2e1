import { z } from "zod";

// The zod schemas of limits per key as JSON (the HTTP API's response
// schemas), and their JSON types; the mappings are in key-limits-json.ts,
// which loads without zod for the CLI.

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
