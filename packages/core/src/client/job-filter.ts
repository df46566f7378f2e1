import { MAX_IDEMPOTENCY_KEY_LENGTH, MAX_NAME_LENGTH, MAX_TENANT_LENGTH, MAX_UNIQUE_KEY_LENGTH } from "../core/defaults.js";
import { ValidationError } from "../core/errors.js";
import { textProblem } from "../core/json.js";
import { isJobStatus, JOB_STATUSES, type JobStatus } from "../core/states.js";
import { type JobFilter, MAX_ERROR_SEARCH_LENGTH, MAX_PAYLOAD_SEARCH_BYTES } from "../core/job-filter.js";
import type { JobFilterValues } from "../store/sql/job-filter.js";
import { checkKnownFields, type KnownFields } from "../core/validate.js";

const JOB_FILTER_FIELDS: KnownFields<JobFilter> = {
  tenant: true,
  status: true,
  queue: true,
  kind: true,
  id: true,
  idempotencyKey: true,
  uniqueKey: true,
  payload: true,
  error: true,
  createdAfter: true,
  createdBefore: true,
  finishedAfter: true,
  finishedBefore: true,
};

function fail(path: string, message: string): never {
  throw new ValidationError(`${path} ${message}`, [{ path, message }]);
}

function text(path: string, value: unknown, max: number): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== "string" || value.length === 0) fail(path, "must be a non-empty string");
  if (value.length > max) fail(path, `must be at most ${max} characters`);
  if (/[\u0000-\u001f\u007f]/.test(value)) fail(path, "must not contain control characters");
  const problem = textProblem(value);
  if (problem !== undefined) fail(path, problem);
  return value;
}

function date(path: string, value: unknown): Date | null {
  if (value === undefined || value === null) return null;
  if (!(value instanceof Date) || Number.isNaN(value.getTime())) fail(path, "must be a valid Date");
  return value;
}

function statuses(value: unknown): JobStatus[] | null {
  if (value === undefined || value === null) return null;
  const list = typeof value === "string" ? [value] : value;
  if (!Array.isArray(list) || list.length === 0) fail("status", `must be a status or a non-empty list of ${JOB_STATUSES.join(", ")}`);
  for (const status of list) {
    if (typeof status !== "string" || !isJobStatus(status)) {
      fail("status", `must be one of ${JOB_STATUSES.join(", ")}; got ${JSON.stringify(status)}`);
    }
  }
  return [...new Set(list as JobStatus[])];
}

function idRange(value: unknown): { from: string; to: string } | null {
  const given = text("id", value, 36);
  if (given === null) return null;
  const hex = given.replace(/-/g, "").toLowerCase();
  if (!/^[0-9a-f]{4,32}$/.test(hex)) fail("id", "must be a job id or at least its first 4 hexadecimal digits");
  const uuid = (digits: string) =>
    `${digits.slice(0, 8)}-${digits.slice(8, 12)}-${digits.slice(12, 16)}-${digits.slice(16, 20)}-${digits.slice(20)}`;
  return { from: uuid(hex.padEnd(32, "0")), to: uuid(hex.padEnd(32, "f")) };
}

function payload(value: unknown): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== "object" || Array.isArray(value)) fail("payload", "must be a JSON object");
  let json: string;
  // The first key or string PostgreSQL cannot store (jsonb refuses NUL and lone surrogates), seen as stringify walks.
  let unstorable: string | undefined;
  try {
    json = JSON.stringify(value, (key: string, item: unknown) => {
      unstorable ??= textProblem(key) ?? (typeof item === "string" ? textProblem(item) : undefined);
      return item;
    });
  } catch (error) {
    fail("payload", `must be JSON: ${(error as Error).message}`);
  }
  if (Buffer.byteLength(json, "utf8") > MAX_PAYLOAD_SEARCH_BYTES) fail("payload", `must be at most ${MAX_PAYLOAD_SEARCH_BYTES} bytes as JSON`);
  if (unstorable !== undefined) fail("payload", unstorable);
  return json;
}

/**
 * Check a filter and turn it into the store's values, or throw a
 * ValidationError naming the field. Unknown fields are refused, so a typo
 * never widens a bulk action to every job.
 */
export function checkJobFilter(filter: JobFilter): JobFilterValues {
  if (filter === null || typeof filter !== "object" || Array.isArray(filter)) fail("filter", "must be an object");
  checkKnownFields(filter, JOB_FILTER_FIELDS, "a job filter field");
  const values: JobFilterValues = {
    tenant: text("tenant", filter.tenant, MAX_TENANT_LENGTH),
    statuses: statuses(filter.status),
    queue: text("queue", filter.queue, MAX_NAME_LENGTH),
    kind: text("kind", filter.kind, MAX_NAME_LENGTH),
    idRange: idRange(filter.id),
    idempotencyKey: text("idempotencyKey", filter.idempotencyKey, MAX_IDEMPOTENCY_KEY_LENGTH),
    uniqueKey: text("uniqueKey", filter.uniqueKey, MAX_UNIQUE_KEY_LENGTH),
    payloadContains: payload(filter.payload),
    errorContains: text("error", filter.error, MAX_ERROR_SEARCH_LENGTH),
    createdAfter: date("createdAfter", filter.createdAfter),
    createdBefore: date("createdBefore", filter.createdBefore),
    finishedAfter: date("finishedAfter", filter.finishedAfter),
    finishedBefore: date("finishedBefore", filter.finishedBefore),
  };
  return values;
}
