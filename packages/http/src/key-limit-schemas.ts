import { z } from "zod";
import { MAX_LIMIT_KEY_LENGTH, MAX_RATE_INTERVAL_MS, MAX_TOP_KEYS, requestObject } from "conveyor-jobs/server";
import { concurrency, queueParams, rateLimitBody } from "./queue-settings-schemas.js";

// Request schemas of the key limit routes (the responses' shapes are in
// wire/key-limits-json.ts). The client re-checks every value and stays the
// authority (see client/key-limits.ts).

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
export const topKeysQuery = requestObject({
  limit: z
    .preprocess(
      (value) => (typeof value === "string" && /^\d{1,7}$/.test(value) ? Number(value) : value),
      z.number({ error: topKeysRule }).int(topKeysRule).min(1, topKeysRule).max(MAX_TOP_KEYS, topKeysRule),
    )
    .optional()
    .describe(`how many keys, 1-${MAX_TOP_KEYS}; default 10`),
});

/** `PATCH` of key limits: an omitted field keeps its value, null removes the limit. */
export const keyLimitsBody = requestObject({
  concurrency: concurrency.optional().describe("most jobs of one key running at once across all workers; null: no cap"),
  rateLimit: rateLimitBody.nullable().optional().describe("at most `count` starts per key per fixed window of `intervalMs`; null: none"),
  throttleMs: z
    .number()
    .int()
    .min(1)
    .max(MAX_RATE_INTERVAL_MS)
    .nullable()
    .optional()
    .describe("at most one start per key per this many ms (a rate limit of 1); exclusive with rateLimit"),
})
  .refine((body) => body.concurrency !== undefined || body.rateLimit !== undefined || body.throttleMs !== undefined, "set concurrency, rateLimit or throttleMs")
  .refine((body) => body.rateLimit === undefined || body.throttleMs === undefined, "give rateLimit or throttleMs, not both");
