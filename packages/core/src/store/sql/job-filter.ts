// The WHERE clause of a job search, shared by the list, the count and the
// bulk actions, so that a bulk action touches exactly the jobs the same
// filter lists. Built from fixed fragments: values only ever travel as
// parameters. The statements that use it are sent unnamed, so PostgreSQL
// plans each one for the filters actually given (a generic plan for every
// optional filter at once would pick one index for all of them).

import { quoteIdent } from "../db.js";
import { jobColumnsOf } from "./job-columns.js";

/** A validated search filter (the client checks and normalizes it: client/job-filter.ts). */
export interface JobFilterValues {
  tenant?: string | null;
  statuses?: readonly string[] | null;
  queue?: string | null;
  kind?: string | null;
  /** Inclusive id range from an id prefix: the prefix padded with 0s and with fs. */
  idRange?: { from: string; to: string } | null;
  idempotencyKey?: string | null;
  uniqueKey?: string | null;
  /** JSON text for `payload @>`. */
  payloadContains?: string | null;
  /** Text the last error's message contains, case-insensitive. */
  errorContains?: string | null;
  createdAfter?: Date | null;
  createdBefore?: Date | null;
  finishedAfter?: Date | null;
  finishedBefore?: Date | null;
}

/**
 * How far a job's id (UUIDv7) may be from its `created_at`. A created range
 * also bounds the id by the range widened by these, so the primary key
 * narrows the scan, while `created_at` stays the exact test. Ids are made
 * from the database's clock as the client measures it (DatabaseClock), just
 * before the insert, and `created_at` is the inserting transaction's start:
 * an id is earlier than its `created_at` by at most a round trip and the
 * clock's error (ID_BEFORE_CREATED_MS, generous), and later by up to how
 * long the transaction had been open (ID_AFTER_CREATED_MS, for an enqueue
 * inside a long transaction of the caller's). The lower bound stays tight,
 * so a count of recent jobs, which reads up from it, reads little else.
 */
const ID_BEFORE_CREATED_MS = 60 * 1000;
const ID_AFTER_CREATED_MS = 60 * 60 * 1000;

/** The smallest UUIDv7 of a Unix millisecond. */
function uuidV7Floor(ms: number): string {
  const hex = Math.max(0, Math.floor(ms)).toString(16).padStart(12, "0").slice(-12);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-0000-0000-000000000000`;
}

/** The largest UUIDv7 of a Unix millisecond. */
function uuidV7Ceiling(ms: number): string {
  const hex = Math.max(0, Math.floor(ms)).toString(16).padStart(12, "0").slice(-12);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-ffff-ffff-ffffffffffff`;
}

/** Escape `%`, `_` and `\` for a LIKE pattern. */
function likeLiteral(text: string): string {
  return text.replace(/[\\%_]/g, (c) => `\\${c}`);
}

/**
 * `AND`-joined conditions over `alias` (the jobs table) for `filter`, with
 * their values appended to `values` (parameters numbered after what it
 * already holds). "true" when nothing filters.
 */
export function jobFilterCondition(filter: JobFilterValues, values: unknown[], alias = "j"): string {
  const conditions: string[] = [];
  const param = (value: unknown, cast = ""): string => {
    values.push(value);
    return `$${values.length}${cast}`;
  };
  const column = (name: string) => `${alias}.${name}`;
  if (filter.tenant != null) conditions.push(`${column("tenant")} = ${param(filter.tenant)}`);
  if (filter.statuses != null && filter.statuses.length > 0) {
    conditions.push(
      filter.statuses.length === 1
        ? `${column("status")} = ${param(filter.statuses[0])}`
        : `${column("status")} = ANY (${param(filter.statuses, "::text[]")})`,
    );
  }
  if (filter.queue != null) conditions.push(`${column("queue")} = ${param(filter.queue)}`);
  if (filter.kind != null) conditions.push(`${column("kind")} = ${param(filter.kind)}`);
  if (filter.idRange != null) {
    conditions.push(`${column("id")} BETWEEN ${param(filter.idRange.from, "::uuid")} AND ${param(filter.idRange.to, "::uuid")}`);
  }
  if (filter.idempotencyKey != null) conditions.push(`${column("idempotency_key")} = ${param(filter.idempotencyKey)}`);
  if (filter.uniqueKey != null) conditions.push(`${column("unique_key")} = ${param(filter.uniqueKey)}`);
  if (filter.payloadContains != null) conditions.push(`${column("payload")} @> ${param(filter.payloadContains, "::jsonb")}`);
  if (filter.errorContains != null) {
    conditions.push(`${column("last_error")}->>'message' ILIKE ${param(`%${likeLiteral(filter.errorContains)}%`)}`);
  }
  if (filter.createdAfter != null) {
    conditions.push(`${column("id")} >= ${param(uuidV7Floor(filter.createdAfter.getTime() - ID_BEFORE_CREATED_MS), "::uuid")}`);
    conditions.push(`${column("created_at")} >= ${param(filter.createdAfter, "::timestamptz")}`);
  }
  if (filter.createdBefore != null) {
    conditions.push(`${column("id")} <= ${param(uuidV7Ceiling(filter.createdBefore.getTime() + ID_AFTER_CREATED_MS), "::uuid")}`);
    conditions.push(`${column("created_at")} < ${param(filter.createdBefore, "::timestamptz")}`);
  }
  if (filter.finishedAfter != null) conditions.push(`${column("finished_at")} >= ${param(filter.finishedAfter, "::timestamptz")}`);
  if (filter.finishedBefore != null) conditions.push(`${column("finished_at")} < ${param(filter.finishedBefore, "::timestamptz")}`);
  return conditions.length === 0 ? "true" : conditions.join("\n  AND ");
}

/**
 * A page of a search for `filter`, newest first: `where` from
 * jobFilterCondition (alias `j`) for that filter, `limit` its parameter.
 * The primary key gives the order, so a page reads from the newest
 * matching row and stops at the page's end.
 *
 * A payload search finds the matching rows first and then sorts them: the planner cannot estimate how many rows a containment
 * test passes, and guessing many it would walk the primary key and test
 * every payload on the way, reading most of a large table when the match is
 * rare. OFFSET 0 keeps the order and limit out of the inner query, which
 * then reads the payload index where one exists (docs/operations.md).
 */
export function jobSearchStatement(schema: string, filter: JobFilterValues, where: string, limit: string): string {
  const from = filter.payloadContains != null ? `(SELECT * FROM ${quoteIdent(schema)}.jobs AS j WHERE ${where} OFFSET 0) AS j` : `${quoteIdent(schema)}.jobs AS j
WHERE ${where}`;
  return `SELECT ${jobColumnsOf("j")} FROM ${from}
ORDER BY j.id DESC
LIMIT ${limit}`;
}

/**
 * How many jobs match, counting `limit` at most (give the exact-count limit
 * plus one, so that "more than the limit" shows): `where` from
 * jobFilterCondition (alias `j`), `limit` its parameter. Counting stops at
 * the limit, so it reads no more rows than that once an index reaches them.
 */
export function jobCountStatement(schema: string, where: string, limit: string): string {
  return `SELECT count(*)::int AS count FROM (
  SELECT 1 FROM ${quoteIdent(schema)}.jobs AS j
  WHERE ${where}
  LIMIT ${limit}) AS counted`;
}

/**
 * The planner's plan for the jobs that match, as JSON: its top node's
 * `Plan Rows` is the estimated count. EXPLAIN reads statistics and the
 * table's size, never its rows. `where` from jobFilterCondition (alias `j`).
 */
export function jobEstimateStatement(schema: string, where: string): string {
  return `EXPLAIN (FORMAT JSON) SELECT 1 FROM ${quoteIdent(schema)}.jobs AS j
WHERE ${where}`;
}
