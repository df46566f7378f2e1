/** Columns every job query returns, in the shape `rowToJob` reads. */
export const JOB_COLUMNS = `id, tenant, queue, kind, payload, priority, status, attempts, max_attempts, run_at,
  locked_by, current_execution_id, lease_expires_at, cancel_requested, idempotency_key, last_error, result,
  created_at, updated_at, started_at, finished_at,
  progress, progress_updated_at, unique_key, limit_key`;

/** `columns` (a comma-separated list) qualified by a table alias, for statements that join. */
function qualified(columns: string, alias: string): string {
  return columns
    .split(",")
    .map((column) => `${alias}.${column.trim()}`)
    .join(", ");
}

/** JOB_COLUMNS qualified by a table alias. */
export function jobColumnsOf(alias: string): string {
  return qualified(JOB_COLUMNS, alias);
}

/** Columns every execution query returns, in the shape `rowToExecution` reads. */
export const EXECUTION_COLUMNS = "id, job_id, attempt, worker_id, started_at, finished_at, outcome, error";

/** EXECUTION_COLUMNS qualified by a table alias. */
export function executionColumnsOf(alias: string): string {
  return qualified(EXECUTION_COLUMNS, alias);
}
