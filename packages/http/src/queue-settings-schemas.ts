import { z } from "zod";
import type { QueueSettings, TenantSettings } from "conveyor-jobs";
import { MAX_CONCURRENCY_LIMIT, MAX_NAME_LENGTH, MAX_RATE_INTERVAL_MS, MAX_RATE_LIMIT_COUNT, MAX_TENANT_LENGTH, NAME_PATTERN, requestObject } from "conveyor-jobs/server";
import { responseSchema } from "./validation.js";

// Request and response schemas of the queue and tenant settings routes. The
// client re-checks every value and stays the authority (see client/queue-limits.ts).

/** A concurrency cap to set: 1 to `MAX_CONCURRENCY_LIMIT`, or null for none (queues, tenants and keys). */
export const concurrency = z.number().int().min(1).max(MAX_CONCURRENCY_LIMIT).nullable();

/** A rate limit to set, `{ count, intervalMs }` (queues and keys). */
export const rateLimitBody = requestObject({
  count: z.number().int().min(1).max(MAX_RATE_LIMIT_COUNT),
  intervalMs: z.number().int().min(1).max(MAX_RATE_INTERVAL_MS),
});

/** Path of the routes on one queue. */
export const queueParams = z.object({
  name: z.string().min(1).max(MAX_NAME_LENGTH).regex(NAME_PATTERN, "must be letters, digits and _ . : - /"),
});

/** Path of the routes on one tenant. */
export const tenantParams = z.object({
  tenant: z.string().min(1).max(MAX_TENANT_LENGTH).regex(/^[^\u0000-\u001f\u007f]*$/, "must not contain control characters"),
});

/** `PATCH /v1/queues/{name}`: an omitted field keeps its value, null removes the limit. */
export const queueLimitsBody = requestObject({
  concurrency: concurrency.optional().describe("most jobs of the queue running at once across all workers; null: no cap"),
  rateLimit: rateLimitBody
    .nullable()
    .optional()
    .describe("at most `count` claims per fixed window of `intervalMs`; null: no rate limit"),
})
  .refine((body) => body.concurrency !== undefined || body.rateLimit !== undefined, "set concurrency or rateLimit");

/** `PATCH /v1/tenants/{tenant}`. */
export const tenantLimitsBody = requestObject({ concurrency: concurrency.describe("most jobs of the tenant running at once across all workers; null: no cap") });

const queueSettings = z.object({
  queue: z.string(),
  paused: z.boolean(),
  concurrency: z.number().int().nullable(),
  rateLimit: z.object({ count: z.number().int(), intervalMs: z.number().int() }).nullable(),
  updatedAt: z.string().describe("ISO 8601"),
});

const tenantSettings = z.object({ tenant: z.string(), concurrency: z.number().int().nullable(), updatedAt: z.string() });

export const queueSettingsResponse = responseSchema(queueSettings);
export const tenantSettingsResponse = responseSchema(tenantSettings);

export function queueSettingsJson(settings: QueueSettings): z.input<typeof queueSettings> {
  return {
    queue: settings.queue,
    paused: settings.paused,
    concurrency: settings.concurrency,
    rateLimit: settings.rateLimit,
    updatedAt: settings.updatedAt.toISOString(),
  };
}

export function tenantSettingsJson(settings: TenantSettings): z.input<typeof tenantSettings> {
  return { tenant: settings.tenant, concurrency: settings.concurrency, updatedAt: settings.updatedAt.toISOString() };
}
