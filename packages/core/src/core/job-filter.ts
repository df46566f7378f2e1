import type { JobStatus } from "./states.js";

// Set, with every limit, in defaults.ts; here too, where the filter is defined.
export { MAX_ERROR_SEARCH_LENGTH, MAX_PAYLOAD_SEARCH_BYTES } from "./defaults.js";

/**
 * Which jobs a search, a count or a bulk action covers. Every field is
 * optional and all given must match; an empty filter covers every job of
 * the scope's tenant.
 */
export interface JobFilter {
  /** Only this tenant's jobs; omit or null for all tenants. */
  tenant?: string | null;
  /** Only jobs in this state, or in any of these. */
  status?: JobStatus | readonly JobStatus[];
  /** Only jobs in this queue. */
  queue?: string;
  /** Only jobs of this kind. */
  kind?: string;
  /** A job id, or its first characters: at least 4 hexadecimal digits, dashes ignored. */
  id?: string;
  /** Only the job created with this idempotency key. */
  idempotencyKey?: string;
  /** Only the job that holds this unique key now (a job lets go of it when it leaves its unique states). */
  uniqueKey?: string;
  /**
   * Only jobs whose payload contains this JSON, as PostgreSQL's `@>` means it:
   * `{ customerId: 42 }` matches `{ "customerId": 42, "plan": "pro" }`.
   */
  payload?: Record<string, unknown>;
  /** Only jobs whose last error's message contains this text, case-insensitive. */
  error?: string;
  /** Only jobs created at or after this time. */
  createdAfter?: Date;
  /** Only jobs created before this time. */
  createdBefore?: Date;
  /** Only jobs finished at or after this time. */
  finishedAfter?: Date;
  /** Only jobs finished before this time. */
  finishedBefore?: Date;
}

