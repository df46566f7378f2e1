// A leaf, so that the SQL text (sql/jobs.ts) and the COPY encoder
// (copy-text.ts) share the column list without the SQL importing the encoder.

/** The columns every COPY line carries, in order (see `copyLines` in copy-text.ts). */
export const COPY_COLUMNS = "id, tenant, queue, kind, payload, priority, max_attempts, run_at, trace_context, limit_key";
