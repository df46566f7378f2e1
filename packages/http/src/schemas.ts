import { z } from "zod";
import {
  batchJobItem,
  decodeCursor,
  jobDependencyFields,
  jobFields,
  jobFilterQuery,
  MAX_BATCH_JOBS,
  MAX_IDEMPOTENCY_KEY_LENGTH,
  MAX_LIST_LIMIT,
  MAX_NAME_LENGTH,
  MAX_STEP_NAME_LENGTH,
  MAX_STEP_RESULT_BYTES,
  MAX_TENANT_LENGTH,
  requestObject,
} from "conveyor-jobs/server";

// Request schemas (a job to enqueue is in wire/job-request.ts). Value rules the client enforces anyway (names, ranges) are
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

/** What lists of dead letters are filtered and paged by. */
const listFilters = {
  kind: filterText(MAX_NAME_LENGTH).optional(),
  queue: filterText(MAX_NAME_LENGTH).optional(),
  tenant: tenantFilter,
  limit,
  cursor,
};

/** `GET /v1/jobs`: every search filter field, and paging. */
export const jobListQuery = requestObject({ ...jobFilterQuery, limit, cursor });

/** `GET /v1/jobs/count`: every search filter field. */
export const jobCountQuery = requestObject(jobFilterQuery);

export const deadLetterListQuery = requestObject(listFilters);

export const tenantQuery = requestObject({ tenant: tenantFilter });

/** `GET /v1/stats/throughput`: one tenant's and one queue's jobs, or all. */
export const throughputQuery = requestObject({ tenant: tenantFilter, queue: filterText(MAX_NAME_LENGTH).optional().describe("only jobs in this queue (the one they are in now)") });

/** `POST /v1/jobs`; the idempotency key comes in the `Idempotency-Key` header. */
export const createJobBody = requestObject({ ...jobFields, ...jobDependencyFields });

/** `GET /v1/flows`. */
export const flowListQuery = requestObject({ kind: z.enum(["flow", "batch"]).optional().describe("only flows, or only batches"), tenant: tenantFilter, limit, cursor });

export const batchBody = requestObject({ jobs: z.array(batchJobItem).min(1).max(MAX_BATCH_JOBS) });

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

/** `POST /v1/flows` and `POST /v1/batches`: the key may also come in the body as `idempotencyKey`. */
export const flowIdempotencyHeaders = z.looseObject({
  "idempotency-key": idempotencyHeaders.shape["idempotency-key"].describe(
    "as the body's idempotencyKey (give one, or both equal): same key and request return the flow it first created (200); a different request: 409",
  ),
});

export type CreateJobBody = z.output<typeof createJobBody>;

// Names of events, steps and waits: the client's rule (1 to MAX_STEP_NAME_LENGTH
// characters, no control characters; client/steps.ts), stated here for the
// document. An event's key may be empty: it then matches waits without a key.
const NO_CONTROL = /^[^\u0000-\u001f]*$/;
const label = (min: 0 | 1) => z.string().min(min).max(MAX_STEP_NAME_LENGTH).regex(NO_CONTROL, "must not contain control characters");

/** `POST /v1/events`: the tenant is the key's, or for an admin key the one it names. */
export const sendEventBody = requestObject({
  event: label(1).describe("the event's name, as waitForEvent names it"),
  key: label(0).optional().describe('matches waits with the same key; default "": waits without a key'),
  payload: z.unknown().optional().describe(`any JSON, at most ${MAX_STEP_RESULT_BYTES} bytes (MAX_STEP_RESULT_BYTES); handed to each wait it wakes; default null`),
  tenant: tenantFilter.describe("the tenant whose waits it may wake: admin keys only (a tenant key may name only its own)"),
});

/** `POST /v1/jobs/{id}/rerun`. */
export const rerunBody = requestObject({ fromStep: label(1).describe("the step, sleep or wait to run again from: it and every record made after it are forgotten") });

/** A `POST /v1/events` body as validated. */
export type SendEventBody = z.output<typeof sendEventBody>;

/** Per item of a `POST /v1/jobs/batch` response, in request order. */
export const BATCH_OUTCOMES = ["created", "existing", "kept", "replaced"] as const;
export type BatchOutcome = (typeof BATCH_OUTCOMES)[number];
