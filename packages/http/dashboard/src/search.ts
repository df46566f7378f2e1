import { MAX_ERROR_SEARCH_LENGTH } from "conveyor-jobs/browser";
import { formatTime } from "./format.js";
import type { BulkActionFilterJson, JobSearchQuery, JobStatus } from "./types.js";

// A job search as the Jobs page keeps it in the URL: every field of
// `GET /v1/jobs` as text, "" when not set. The same search becomes a bulk
// action's filter, and an operation's recorded filter becomes a search again,
// so a search and the action taken over it always name the same jobs.

/** Every search field of `GET /v1/jobs`, in the order the page describes them. */
export const SEARCH_FIELDS = [
  "status",
  "queue",
  "kind",
  "tenant",
  "id",
  "idempotencyKey",
  "uniqueKey",
  "payload",
  "error",
  "createdAfter",
  "createdBefore",
  "finishedAfter",
  "finishedBefore",
] as const;
export type SearchField = (typeof SEARCH_FIELDS)[number];

// SEARCH_FIELDS names exactly the API's search fields: a field added to (or
// removed from) the route's schema breaks this line's type-check.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type Check<T extends true> = T;
export type SearchFieldsComplete = Check<Same<SearchField, Exclude<keyof JobSearchQuery, "limit" | "cursor">>>;

/** The fields under "More filters". */
export const MORE_FIELDS = [
  "id",
  "idempotencyKey",
  "uniqueKey",
  "payload",
  "error",
  "createdAfter",
  "createdBefore",
  "finishedAfter",
  "finishedBefore",
] as const satisfies readonly SearchField[];

/** Searches that read rows no index serves, so the page runs them on request rather than every 2 s. */
export const COSTLY_FIELDS = ["payload", "error"] as const satisfies readonly SearchField[];

export type Search = Record<SearchField, string>;

export function emptySearch(): Search {
  return Object.fromEntries(SEARCH_FIELDS.map((field) => [field, ""])) as Search;
}

/** The search in a route's query string. */
export function searchOf(params: URLSearchParams): Search {
  const search = emptySearch();
  for (const field of SEARCH_FIELDS) search[field] = params.get(field) ?? "";
  return search;
}

/** Only the fields set, for a URL or a query string. */
export function setFields(search: Search): Partial<Search> {
  const set: Partial<Search> = {};
  for (const field of SEARCH_FIELDS) if (search[field] !== "") set[field] = search[field];
  return set;
}

/** True when it names nothing but (perhaps) a tenant: it covers every job, which a bulk action must be told explicitly. */
export function coversEverything(search: Search): boolean {
  return SEARCH_FIELDS.every((field) => field === "tenant" || search[field] === "");
}

export function isCostly(search: Search): boolean {
  return COSTLY_FIELDS.some((field) => search[field] !== "");
}

const ID_PREFIX = /^[0-9a-f-]*$/i;
const ZONED_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:?\d\d)$/i;

/** What a field is called in the page's words. */
export const FIELD_LABELS: Record<SearchField, string> = {
  status: "Status",
  queue: "Queue",
  kind: "Kind",
  tenant: "Tenant",
  id: "Id or prefix",
  idempotencyKey: "Idempotency key",
  uniqueKey: "Unique key",
  payload: "Payload contains (JSON)",
  error: "Error text",
  createdAfter: "Created after",
  createdBefore: "Created before",
  finishedAfter: "Finished after",
  finishedBefore: "Finished before",
};

/**
 * A light check of what is typed, before anything is sent, each problem
 * naming its field: a payload that is not a JSON object, an id prefix that
 * is not hexadecimal, a time without a zone. Everything else (a status, a
 * name) is the API's to refuse, and it checks these again.
 */
export function checkSearch(search: Search): string[] {
  const problems: string[] = [];
  if (search.payload !== "") {
    const parsed = parsePayload(search.payload);
    if (typeof parsed === "string") problems.push(`${FIELD_LABELS.payload}: ${parsed}`);
  }
  if (search.id !== "") {
    const digits = search.id.replace(/-/g, "").length;
    if (!ID_PREFIX.test(search.id) || digits < 4 || digits > 32) problems.push(`${FIELD_LABELS.id}: a job id or at least its first 4 hexadecimal digits (0-9, a-f).`);
  }
  if (search.error.length > MAX_ERROR_SEARCH_LENGTH) problems.push(`${FIELD_LABELS.error}: at most ${MAX_ERROR_SEARCH_LENGTH} characters.`);
  for (const field of ["createdAfter", "createdBefore", "finishedAfter", "finishedBefore"] as const) {
    const value = search[field];
    if (value !== "" && (!ZONED_TIME.test(value) || Number.isNaN(Date.parse(value)))) {
      problems.push(`${FIELD_LABELS[field]}: not a date and time with a zone, e.g. 2026-01-31T12:00:00Z.`);
    }
  }
  return problems;
}

/** The payload filter as an object, or why it is not one. */
export function parsePayload(text: string): Record<string, unknown> | string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    return `not JSON (${(error as Error).message}).`;
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) return 'must be a JSON object, e.g. {"customerId":42}.';
  return parsed as Record<string, unknown>;
}

/** The statuses a search names ([] for any). */
export function statusesOf(search: Search): JobStatus[] {
  return search.status === "" ? [] : (search.status.split(",").map((one) => one.trim()) as JobStatus[]);
}

/** The search as a bulk action's filter (JSON). Only for a search `checkSearch` passed. */
export function filterOf(search: Search): BulkActionFilterJson {
  const filter: BulkActionFilterJson = {};
  for (const field of SEARCH_FIELDS) {
    const value = search[field];
    if (value === "") continue;
    if (field === "status") {
      const statuses = statusesOf(search);
      filter.status = statuses.length === 1 ? statuses[0] : statuses;
    } else if (field === "payload") {
      const payload = parsePayload(value);
      if (typeof payload !== "string") filter.payload = payload;
    } else {
      filter[field] = value;
    }
  }
  return filter;
}

/** An operation's recorded filter as a search, to list the jobs it covered. */
export function searchOfFilter(filter: BulkActionFilterJson): Search {
  const search = emptySearch();
  for (const field of SEARCH_FIELDS) {
    const value = filter[field];
    if (value === undefined) continue;
    if (field === "status") search.status = Array.isArray(value) ? value.join(",") : String(value);
    else if (field === "payload") search.payload = JSON.stringify(value);
    else search[field] = String(value);
  }
  return search;
}

/**
 * The search in words, e.g. `status dead or retrying; kind email.send;
 * last error contains "timeout"`; "every job" when it names nothing.
 */
export function describeSearch(search: Search): string {
  const words: string[] = [];
  const quoted = (value: string) => JSON.stringify(value);
  if (search.status !== "") words.push(`status ${statusesOf(search).join(" or ")}`);
  if (search.queue !== "") words.push(`queue ${search.queue}`);
  if (search.kind !== "") words.push(`kind ${search.kind}`);
  if (search.tenant !== "") words.push(`tenant ${search.tenant}`);
  if (search.id !== "") words.push(`id starting ${search.id}`);
  if (search.idempotencyKey !== "") words.push(`idempotency key ${quoted(search.idempotencyKey)}`);
  if (search.uniqueKey !== "") words.push(`unique key ${quoted(search.uniqueKey)}`);
  if (search.payload !== "") words.push(`payload contains ${search.payload}`);
  if (search.error !== "") words.push(`last error contains ${quoted(search.error)}`);
  if (search.createdAfter !== "") words.push(`created at or after ${formatTime(search.createdAfter)}`);
  if (search.createdBefore !== "") words.push(`created before ${formatTime(search.createdBefore)}`);
  if (search.finishedAfter !== "") words.push(`finished at or after ${formatTime(search.finishedAfter)}`);
  if (search.finishedBefore !== "") words.push(`finished before ${formatTime(search.finishedBefore)}`);
  if (coversEverything(search)) return search.tenant === "" ? "every job" : `every job of tenant ${search.tenant}`;
  return words.join("; ");
}

/** An ISO time as a `datetime-local` input's value, in the browser's zone ("" for none). */
export function toLocalInput(iso: string): string {
  if (iso === "") return "";
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return "";
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}T${pad(date.getHours())}:${pad(date.getMinutes())}${
    date.getSeconds() !== 0 ? `:${pad(date.getSeconds())}` : ""
  }`;
}

/** A `datetime-local` value (the browser's zone) as an ISO time in UTC; "" stays "". */
export function fromLocalInput(value: string): string {
  if (value === "") return "";
  const date = new Date(value); // a date-time without an offset is read as local time
  return Number.isNaN(date.getTime()) ? value : date.toISOString();
}

/** An error message as error-text search: its first line, within the search's length limit. */
export function errorSearchText(message: string): string {
  const firstLine = message.split(/[\r\n]/, 1)[0] ?? "";
  return firstLine.replace(/[\u0000-\u001f\u007f]/g, " ").trim().slice(0, MAX_ERROR_SEARCH_LENGTH);
}
