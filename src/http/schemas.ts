import { z } from "zod";
import { decodeCursor } from "../client/cursor.js";
import {
  MAX_BATCH_JOBS,
  MAX_DELAY_MS,
  MAX_IDEMPOTENCY_KEY_LENGTH,
  MAX_LIST_LIMIT,
  MAX_MAX_ATTEMPTS,
  MAX_NAME_LENGTH,
  MAX_PRIORITY,
  MAX_RUN_AT_MS,
  MAX_TENANT_LENGTH,
  MAX_UNIQUE_KEY_LENGTH,
  MIN_PRIORITY,
  MIN_RUN_AT_MS,
} from "../core/defaults.js";
import { JOB_STATUSES } from "../core/states.js";
import { UNIQUE_CONFLICT_MODES, UNIQUE_STATES } from "../core/unique.js";

// Request schemas. Value rules the client enforces anyway (names, ranges) are
// repeated here so the OpenAPI document states them; the client stays the
// authority and its messages are just as precise.

const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
// Filters go straight into SQL parameters: refuse what PostgreSQL text cannot hold (NUL) and control characters.
const PRINTABLE = /^[^\u0000-\u001f\u007f]*$/;

const filterText = (max: number) => z.string().min(1).max(max).regex(PRINTABLE, "must not contain control characters");

/** Path of routes on one job or dead letter. */
export const idParams = z.object({ id: z.string().regex(UUID, "must be a UUID") });

// An integer parameter: documented as what it is (generated clients send
// `limit: 5`), while the query string brings it as text of digits, which
// becomes the number before the range is checked; any other text is refused.
const limitRule = `must be a whole number from 1 to ${MAX_LIST_LIMIT}`;
const limit = z
  .preprocess(
    (value) => (typeof value === "string" && /^\d{1,7}$/.test(value) ? Number(value) : value),
    z.number({ error: limitRule }).int(limitRule).min(1, limitRule).max(MAX_LIST_LIMIT, limitRule),
  )
  .optional()
  .describe(`page size, 1-${MAX_LIST_LIMIT}; default 50`);

const cursor = z
  .string()
  .max(200)
  .refine((value) => {
    try {
      decodeCursor(value);
      return true;
    } catch {
      return false;
    }
  }, "is not a cursor this API returned")
  .optional()
  .describe("`nextCursor` of the previous page");

const tenantFilter = filterText(MAX_TENANT_LENGTH).optional().describe("admin keys only (a tenant key may name only its own tenant)");

/** What lists of jobs and of dead letters are both filtered and paged by. */
const listFilters = {
  kind: filterText(MAX_NAME_LENGTH).optional(),
  queue: filterText(MAX_NAME_LENGTH).optional(),
  tenant: tenantFilter,
  limit,
  cursor,
};

export const jobListQuery = z.object({ status: z.enum(JOB_STATUSES).optional(), ...listFilters }).strict();

export const deadLetterListQuery = z.object(listFilters).strict();

export const tenantQuery = z.object({ tenant: tenantFilter }).strict();

const jobFields = {
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
  unique: z
    .object({
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
    .strict()
    .optional()
    .describe("unique job / debounce"),
};

/** `POST /v1/jobs`; the idempotency key comes in the `Idempotency-Key` header. */
export const createJobBody = z.object(jobFields).strict();

/** One job of `POST /v1/jobs/batch`, which may carry its own idempotency key. */
export const batchJobItem = z
  .object({ ...jobFields, idempotencyKey: z.string().min(1).max(MAX_IDEMPOTENCY_KEY_LENGTH).optional() })
  .strict();

export const batchBody = z.object({ jobs: z.array(batchJobItem).min(1).max(MAX_BATCH_JOBS) }).strict();

// Loose: the validated value replaces request.headers, which must keep every other header.
export const idempotencyHeaders = z.looseObject({
  "idempotency-key": z
    .string()
    .min(1)
    .max(MAX_IDEMPOTENCY_KEY_LENGTH)
    .regex(PRINTABLE, "must not contain control characters")
    .optional()
    .describe("same key and request: the job it first created (200); same key, different request: 409"),
});

export type CreateJobBody = z.output<typeof createJobBody>;
export type BatchJobItem = z.output<typeof batchJobItem>;

/** Per item of a `POST /v1/jobs/batch` response, in request order. */
export const BATCH_OUTCOMES = ["created", "existing", "kept", "replaced"] as const;
export type BatchOutcome = (typeof BATCH_OUTCOMES)[number];
