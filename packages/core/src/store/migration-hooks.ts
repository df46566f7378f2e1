import { copyHistoryAhead, type MigrationHookContext } from "./history-copy.js";

export type { MigrationHookContext };

/** Work a migration needs done before it, outside its transaction, while workers go on. */
export type MigrationHook = (context: MigrationHookContext) => Promise<void>;

/**
 * The hooks each migration declares, by file name. `before` runs before
 * the migration's own transaction, on a schema where every migration before
 * it is applied; it must be safe to run again after an interruption.
 */
export const MIGRATION_HOOKS: Readonly<Record<string, { before: MigrationHook }>> = {
  // 028 replaces jobs under an exclusive lock; the history is copied ahead
  // (tables of 027_jobs_history_copy.sql) so that the lock covers only what
  // changed since.
  "028_jobs_by_state": { before: copyHistoryAhead },
};
