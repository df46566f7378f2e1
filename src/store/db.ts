import pg from "pg";

/**
 * The one thing Conveyor needs from a database connection: run a statement
 * with bound values. A `pg.Pool`, a `pg.Client` inside the caller's
 * transaction, or any driver wrapper with this shape will do; that is what
 * makes enqueueing inside your own transaction work.
 */
export interface Queryable {
  query(text: string, values?: unknown[]): Promise<{ rows: any[]; rowCount: number | null }>;
}

/** A pool the library can check clients out of (LISTEN and migrations need a dedicated connection). */
export type Pool = pg.Pool;
export type PoolClient = pg.PoolClient;

// Return int8 and numeric as JS numbers: counts and attempts fit comfortably.
// Set per pool (not globally) so Conveyor does not change the caller's pg types.
const types = {
  getTypeParser(oid: number, format?: "text" | "binary") {
    if (oid === 20) return (value: string) => Number(value);
    return (pg.types.getTypeParser as (oid: number, format?: string) => unknown)(oid, format);
  },
} as pg.CustomTypesConfig;

export interface PoolOptions {
  connectionString: string;
  max: number;
  applicationName: string;
}

export function createPool(options: PoolOptions): pg.Pool {
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: options.max,
    application_name: options.applicationName,
    types,
    // Notice dead peers (a host that vanished) instead of waiting on them forever.
    keepAlive: true,
    connectionTimeoutMillis: 10_000,
    // Conveyor's statements look rows up by key in small, hot, cached tables.
    // At the default random_page_cost (4, tuned for spinning disks) the planner
    // preferred a sequential scan of a 50,000-row jobs table over 500 primary-key
    // lookups for a completion batch: 20.6 ms against 8.6 ms with 1.1. Only on
    // pools Conveyor creates (a pool you pass keeps your settings); pg awaits
    // onConnect before handing the client out, so it never races a query.
    // Plans are left at PostgreSQL's default (plan_cache_mode auto): which
    // statements may reuse a plan is decided per statement (queries.ts).
    onConnect: (client: pg.ClientBase) => client.query("SET random_page_cost = 1.1"),
  });
  // An idle client whose server went away emits 'error' on the pool; without a
  // listener Node would crash the process. The next query reconnects.
  pool.on("error", () => {});
  return pool;
}

/**
 * A pool of one connection, configured as `base` is (a pool Conveyor made or
 * the caller's), whose session plans the statements prepared on it as
 * `planCacheMode` says: "force_custom_plan" plans every call for its values
 * (parsed once, planned each time), "force_generic_plan" plans once. For the
 * worker's claims (claim-store.ts).
 */
export function createPlanModePool(base: pg.Pool, applicationName: string, planCacheMode: "force_custom_plan" | "force_generic_plan"): pg.Pool {
  const options = (base as unknown as { options: pg.PoolConfig }).options;
  const pool = new pg.Pool({
    ...options,
    max: 1,
    application_name: applicationName,
    onConnect: async (client: pg.ClientBase) => {
      await options.onConnect?.(client);
      await client.query(`SET plan_cache_mode = ${planCacheMode}`);
    },
  });
  pool.on("error", () => {});
  return pool;
}

export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}
