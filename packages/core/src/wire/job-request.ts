import { z } from "zod";
import { requestObject } from "./request-object.js";
import {
  MAX_DELAY_MS,
  MAX_IDEMPOTENCY_KEY_LENGTH,
  MAX_LIMIT_KEY_LENGTH,
  MAX_MAX_ATTEMPTS,
  MAX_NAME_LENGTH,
  MAX_PRIORITY,
  MAX_RUN_AT_MS,
  MAX_TENANT_LENGTH,
  MAX_UNIQUE_KEY_LENGTH,
  MIN_PRIORITY,
  MIN_RUN_AT_MS,
} from "../core/defaults.js";
import { UNIQUE_CONFLICT_MODES, UNIQUE_STATES } from "../core/unique.js";

// A job to enqueue as JSON: the body of `POST /v1/jobs` and each item of
// `POST /v1/jobs/batch`, and each line of `conveyor enqueue --file`, which
// takes the batch item as it is. Value rules the client enforces anyway
// (names, ranges) are repeated here so the OpenAPI document states them; the
// client stays the authority and its messages are just as precise.

/** The fields of a job to enqueue. */
export const jobFields = {
  kind: z.string().min(1).max(MAX_NAME_LENGTH).describe("a job kind from the jobs module"),
  payload: z.unknown().describe("validated by the kind's payload schema"),
  queue: z.string().min(1).max(MAX_NAME_LENGTH).optional().describe("default: the kind's queue"),
  priority: z.number().int().min(MIN_PRIORITY).max(MAX_PRIORITY).optional().describe("lower runs first; default: the kind's"),
  runAt: z.iso
    .datetime({ offset: true })
    .refine((text) => {
      const ms = Date.parse(text);
      return ms >= MIN_RUN_AT_MS && ms < MAX_RUN_AT_MS;
    }, "must be from 2000-01-01T00:00:00Z to before 10000-01-01T00:00:00Z")
    .optional()
    .describe("ISO 8601 time with a zone, from 2000-01-01T00:00:00Z to before 10000-01-01T00:00:00Z; exclusive with delayMs"),
  delayMs: z
    .number()
    .min(0)
    .max(MAX_DELAY_MS)
    .optional()
    .describe(`run no earlier than this many ms from now (database clock); at most ${MAX_DELAY_MS} (10 years)`),
  maxAttempts: z.number().int().min(1).max(MAX_MAX_ATTEMPTS).optional().describe("default: the kind's"),
  tenant: z.string().min(1).max(MAX_TENANT_LENGTH).optional().describe("admin keys only; default: the key's tenant"),
  limitKey: z
    .string()
    .min(1)
    .max(MAX_LIMIT_KEY_LENGTH)
    .optional()
    .describe("the key the queue's limits per key count this job under (a customer, a host); default: the kind's limitKey(payload), else none"),
  unique: requestObject({
    key: z.string().min(1).max(MAX_UNIQUE_KEY_LENGTH).describe("at most one job per key (per tenant) in `states`"),
    states: z
      .array(z.enum(UNIQUE_STATES))
      .min(1)
      .optional()
      .describe('states in which the job holds the key; must include "queued"; default all three'),
    onConflict: z
      .enum(UNIQUE_CONFLICT_MODES)
      .optional()
      .describe("keep: answer 200 with the holder; replace: give a waiting holder this payload and run time (200); drop: 409; default keep"),
  })
    .optional()
    .describe("unique job / debounce"),
};

/** One job of `POST /v1/jobs/batch`, which may carry its own idempotency key. */
export const batchJobItem = requestObject({ ...jobFields, idempotencyKey: z.string().min(1).max(MAX_IDEMPOTENCY_KEY_LENGTH).optional() });

/** One parsed job of `POST /v1/jobs/batch`. */
export type BatchJobItem = z.output<typeof batchJobItem>;
