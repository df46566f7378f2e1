import { READY } from "./status-sets.js";

// The index of ready jobs by tenant, built only when tenant fairness needs it
// (not in the schema's migrations). Both statements run in one transaction (tenant-index-store.ts).

/**
 * One builder at a time per schema, whatever the process: two
 * `CREATE INDEX IF NOT EXISTS` at once could both find no index and collide.
 * $1 schema name
 */
export const tenantIndexLock = `
SELECT pg_advisory_xact_lock(hashtext('conveyor tenant index ' || $1))`;

/**
 * The tenant-fair claim's index (claims-limited.ts): a loose index scan
 * walks the distinct tenants with ready work, one probe each, then takes
 * each tenant's next jobs in order. Not CONCURRENTLY: it would wait for
 * every older transaction in the database, and leave an invalid index
 * behind when interrupted; this holds writes to jobs back while it builds,
 * as a migration does. No parameters.
 */
export const tenantIndexCreate = `
CREATE INDEX IF NOT EXISTS jobs_ready_by_tenant_idx ON {{schema}}.jobs_live (tenant, priority, run_at, id)
  WHERE status IN (${READY})`;

/** Whether the index exists; a catalog read, which takes no lock on jobs. $1 schema name */
export const tenantIndexExists = `
SELECT EXISTS (SELECT 1 FROM pg_indexes WHERE schemaname = $1 AND indexname = 'jobs_ready_by_tenant_idx') AS present`;
