import { z } from "zod";
import { MAX_CONCURRENCY_LIMIT, MAX_LIMIT_KEY_LENGTH, MAX_RATE_INTERVAL_MS, MAX_RATE_LIMIT_COUNT, MAX_TOP_KEYS } from "../core/defaults.js";
import { queueParams } from "./queue-settings-schemas.js";
import { toJsonSchema } from "./validation.js";

// Request and response schemas of the key limit routes. The client
// re-checks every value and stays the authority (see client/key-limits.ts).

/** Path of the routes on one key of one queue. */
export const keyParams = queueParams.extend({
  key: z
    .string()
    .min(1)
    .max(MAX_LIMIT_KEY_LENGTH)
    .regex(/^[^\u0000-\u001f]*$/, "must not contain control characters")
    .describe("the limit key, URL-encoded"),
});

const topKeysRule = `must be a whole number from 1 to ${MAX_TOP_KEYS}`;

/** `GET /v1/queues/{name}/keys`. */
export const topKeysQuery = z
  .object({
    limit: z
      .preprocess(
        (value) => (typeof value === "string" && /^\d{1,7}$/.test(value) ? Number(value) : value),
        z.number({ error: topKeysRule }).int(topKeysRule).min(1, topKeysRule).max(MAX_TOP_KEYS, topKeysRule),
      )
      .optional()
      .describe(`how many keys, 1-${MAX_TOP_KEYS}; default 10`),
  })
  .strict();

const rateLimit = z.object({
  count: z.number().int().min(1).max(MAX_RATE_LIMIT_COUNT),
  intervalMs: z.number().int().min(1).max(MAX_RATE_INTERVAL_MS),
});

/** `PATCH` of key limits: an omitted field keeps its value, null removes the limit. */
export const keyLimitsBody = z
  .object({
    concurrency: z
      .number()
      .int()
      .min(1)
      .max(MAX_CONCURRENCY_LIMIT)
      .nullable()
      .optional()
      .describe("most jobs of one key running at once across all workers; null: no cap"),
    rateLimit: rateLimit.strict().nullable().optional().describe("at most `count` starts per key per fixed window of `intervalMs`; null: none"),
    throttleMs: z
      .number()
      .int()
      .min(1)
      .max(MAX_RATE_INTERVAL_MS)
      .nullable()
      .optional()
      .describe("at most one start per key per this many ms (a rate limit of 1); exclusive with rateLimit"),
  })
  .strict()
  .refine((body) => body.concurrency !== undefined || body.rateLimit !== undefined || body.throttleMs !== undefined, "set concurrency, rateLimit or throttleMs")
  .refine((body) => body.rateLimit === undefined || body.throttleMs === undefined, "give rateLimit or throttleMs, not both");

const limits = {
  concurrencyLimit: z.number().int().nullable(),
  rateLimit: z.object({ count: z.number().int(), intervalMs: z.number().int() }).nullable(),
};

const keyLimitSettings = z.object({
  queue: z.string(),
  key: z.string().nullable().describe("null: the queue's default for every key"),
  ...limits,
  updatedAt: z.string().describe("ISO 8601"),
});

const source = z.enum(["override", "default", "none"]).describe("where the key's limits come from");

const keyLoad = z.object({ key: z.string(), waiting: z.number().int(), running: z.number().int(), ...limits, source });

const keyStatus = z.object({
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

export const keyLimitSettingsResponse = toJsonSchema(keyLimitSettings);
export const keyLimitListResponse = toJsonSchema(z.object({ items: z.array(keyLimitSettings) }));
export const topKeysResponse = toJsonSchema(z.object({ items: z.array(keyLoad) }));
export const keyStatusResponse = toJsonSchema(keyStatus);

export { keyLimitSettingsJson, keyLoadJson, keyStatusJson } from "../wire/key-limits-json.js";
