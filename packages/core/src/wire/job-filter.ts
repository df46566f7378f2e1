import { z } from "zod";
import { requestObject } from "./request-object.js";
import { MAX_IDEMPOTENCY_KEY_LENGTH, MAX_NAME_LENGTH, MAX_TENANT_LENGTH, MAX_UNIQUE_KEY_LENGTH } from "../core/defaults.js";
import { JOB_STATUSES, type JobStatus } from "../core/states.js";
import { type JobFilter, MAX_ERROR_SEARCH_LENGTH, MAX_PAYLOAD_SEARCH_BYTES } from "../core/job-filter.js";
import { parseStrictJson, StrictJsonError } from "./strict-json.js";

// A job search filter as JSON (the `filter` of a bulk action) and as a
// query string (`GET /v1/jobs`, `GET /v1/jobs/count`). The client checks it
// again (client/job-filter.ts) and stays the authority; these state the
// rules in the OpenAPI document and turn text into the library's types.

const PRINTABLE = /^[^\u0000-\u001f\u007f]*$/;
const text = (max: number) => z.string().min(1).max(max).regex(PRINTABLE, "must not contain control characters");
const status = z.enum(JOB_STATUSES as readonly JobStatus[] as [JobStatus, ...JobStatus[]]);
const instant = z.iso.datetime({ offset: true, message: "must be an ISO 8601 date-time with a time zone, e.g. 2026-01-31T12:00:00Z" });
// Hex digits and dashes, 4 to 32 of the digits: what the client takes (dashes anywhere are ignored).
const ID_PREFIX = /^(?=(?:-*[0-9a-fA-F]){4})(?!(?:-*[0-9a-fA-F]){33})[0-9a-fA-F-]{4,36}$/;
const idPrefix = z
  .string()
  .regex(ID_PREFIX, "must be a job id or at least its first 4 hexadecimal digits")
  .describe("a job id or its first hexadecimal digits (at least 4)");

/** Fields every form of the filter shares, each described once. */
const shared = {
  queue: text(MAX_NAME_LENGTH).optional(),
  kind: text(MAX_NAME_LENGTH).optional(),
  tenant: text(MAX_TENANT_LENGTH).optional().describe("admin keys only (a tenant key may name only its own tenant)"),
  id: idPrefix.optional(),
  idempotencyKey: text(MAX_IDEMPOTENCY_KEY_LENGTH).optional(),
  uniqueKey: text(MAX_UNIQUE_KEY_LENGTH).optional().describe("the job holding this unique key now"),
  error: text(MAX_ERROR_SEARCH_LENGTH).optional().describe("text the last error's message contains, case-insensitive"),
  createdAfter: instant.optional(),
  createdBefore: instant.optional(),
  finishedAfter: instant.optional(),
  finishedBefore: instant.optional(),
};

/** The filter as JSON, in a request body. */
export const jobFilterBody = requestObject({
  ...shared,
  status: z.union([status, z.array(status).min(1)]).optional().describe("a state, or a list of them"),
  payload: z.record(z.string(), z.unknown()).optional().describe("jobs whose payload contains this JSON object (PostgreSQL @>)"),
});

/** The filter as query-string parameters: `status` a comma-separated list, `payload` JSON text. */
export const jobFilterQuery = {
  ...shared,
  status: z
    .string()
    .transform((value, ctx) => {
      const list = value.split(",").map((s) => s.trim());
      for (const one of list) {
        if (!(JOB_STATUSES as readonly string[]).includes(one)) {
          ctx.addIssue({ code: "custom", message: `must be one or more of ${JOB_STATUSES.join(", ")}, comma-separated; got ${JSON.stringify(one)}` });
          return z.NEVER;
        }
      }
      return list as JobStatus[];
    })
    .optional()
    .describe(`a state, or several comma-separated: ${JOB_STATUSES.join(", ")}`),
  payload: z
    .string()
    .max(MAX_PAYLOAD_SEARCH_BYTES)
    .transform((value, ctx) => {
      // Strict, as bodies are read: a number JSON cannot hold exactly, a __proto__ key, a NUL character or a
      // lone surrogate is refused here, naming where, never changed or left for the database to refuse.
      let parsed: unknown;
      try {
        parsed = parseStrictJson(Buffer.from(value, "utf8"));
      } catch (error) {
        const issue = error instanceof StrictJsonError ? error.issue : undefined;
        const message = issue
          ? `${issue.message}${issue.path === "" ? "" : ` (at ${issue.path})`}`
          : `must be a JSON object: ${(error as Error).message.replace(/^request body /, "")}`;
        ctx.addIssue({ code: "custom", message });
        return z.NEVER;
      }
      if (parsed !== null && typeof parsed === "object" && !Array.isArray(parsed)) return parsed as Record<string, unknown>;
      ctx.addIssue({ code: "custom", message: 'must be a JSON object, e.g. {"customerId":42}' });
      return z.NEVER;
    })
    .optional()
    .describe('jobs whose payload contains this JSON object (PostgreSQL @>), e.g. {"customerId":42}'),
};

/** The wire filter (either form, once parsed) as the library's JobFilter. */
export function toJobFilter(wire: {
  status?: JobStatus | JobStatus[] | undefined;
  queue?: string | undefined;
  kind?: string | undefined;
  tenant?: string | undefined;
  id?: string | undefined;
  idempotencyKey?: string | undefined;
  uniqueKey?: string | undefined;
  payload?: Record<string, unknown> | undefined;
  error?: string | undefined;
  createdAfter?: string | undefined;
  createdBefore?: string | undefined;
  finishedAfter?: string | undefined;
  finishedBefore?: string | undefined;
}): JobFilter {
  const filter: JobFilter = {};
  const copy = <K extends keyof JobFilter>(key: K, value: JobFilter[K] | undefined) => {
    if (value !== undefined) filter[key] = value;
  };
  copy("status", wire.status);
  copy("queue", wire.queue);
  copy("kind", wire.kind);
  copy("tenant", wire.tenant);
  copy("id", wire.id);
  copy("idempotencyKey", wire.idempotencyKey);
  copy("uniqueKey", wire.uniqueKey);
  copy("payload", wire.payload);
  copy("error", wire.error);
  copy("createdAfter", wire.createdAfter === undefined ? undefined : new Date(wire.createdAfter));
  copy("createdBefore", wire.createdBefore === undefined ? undefined : new Date(wire.createdBefore));
  copy("finishedAfter", wire.finishedAfter === undefined ? undefined : new Date(wire.finishedAfter));
  copy("finishedBefore", wire.finishedBefore === undefined ? undefined : new Date(wire.finishedBefore));
  return filter;
}
