import pg from "pg";
import { CONNECT_TIMEOUT_MS } from "../core/defaults.js";
import { HostSelector, parseHostList, writableClientClass } from "./hosts.js";

export type { Queryable } from "../core/queryable.js";

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

/**
 * The settings of a new connection to the database, as pg takes them. The
 * client resolves them once (`connectionConfig` for a pool it creates,
 * `poolConnectionConfig` for one it is given) and hands them to whatever
 * opens connections beside its pool (a worker's LISTEN connection and its
 * claim connection).
 */
export type ConnectionConfig = Readonly<pg.PoolConfig>;

/** What a pool Conveyor creates connects with. */
export interface ConnectionOptions {
  connectionString: string;
  applicationName: string;
  /** Client-side deadline of every statement on the pool, in ms; 0 for none. */
  queryTimeoutMs: number;
  /**
   * Set SESSION_SETTINGS on each new connection. False behind a pooler in
   * transaction mode, where a session setting would land on whichever
   * server connection the pooler picked and stay there for other clients.
   */
  sessionSettings?: boolean;
}

export interface PoolOptions extends ConnectionOptions {
  max: number;
}

/**
 * Settings each connection of a pool Conveyor creates sets for its server
 * session. The TCP ones make the server notice a client whose host vanished
 * (keepalives while idle, `tcp_user_timeout` while it has unacknowledged
 * data to send) within about a minute instead of the kernel's two hours:
 * until then its backend would keep every lock it held. `random_page_cost`:
 * Conveyor's statements look rows up by key in small, hot, cached tables. At
 * the default (4, tuned for spinning disks) the planner preferred a
 * sequential scan of a 50,000-row jobs table over 500 primary-key lookups
 * for a completion batch; 1.1 keeps the index.
 */
export const SESSION_SETTINGS = [
  "SET random_page_cost = 1.1",
  "SET tcp_keepalives_idle = 15",
  "SET tcp_keepalives_interval = 5",
  "SET tcp_keepalives_count = 3",
  "SET tcp_user_timeout = 30000",
].join("; ");

/**
 * How the connections of a pool Conveyor creates are made (`createPool`),
 * and the connections it opens beside that pool. A URL listing several
 * hosts (`postgres://u@db1,db2:5433/app`) gives connections that go to
 * whichever of them takes writes (hosts.ts).
 */
export function connectionConfig(options: ConnectionOptions): ConnectionConfig {
  const hosts = parseHostList(options.connectionString);
  return {
    connectionString: hosts ? hosts.urls[0]! : options.connectionString,
    ...(hosts ? { Client: writableClientClass(new HostSelector(hosts)) } : {}),
    application_name: options.applicationName,
    types,
    // Notice dead peers (a host that vanished) instead of waiting on them forever.
    keepAlive: true,
    keepAliveInitialDelayMillis: 15_000,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    // A statement whose answer never comes (a cut network, a frozen server)
    // fails after this long and its connection is discarded, so no caller,
    // and no worker shutdown, waits on it for the kernel's TCP timeouts.
    query_timeout: options.queryTimeoutMs || undefined,
    // Only on pools Conveyor creates (a pool you pass keeps your settings); pg
    // awaits onConnect before handing the client out, so it never races a query.
    // Plans are left at PostgreSQL's default (plan_cache_mode auto): which
    // statements may reuse a plan is decided per statement (queries.ts).
    ...(options.sessionSettings === false ? {} : { onConnect: (client: pg.ClientBase) => client.query(SESSION_SETTINGS) }),
  };
}

/**
 * The connection settings of a pool the caller made: the config it was
 * created with, which pg-pool keeps as the pool's `options` (a public
 * member of `pg.Pool` in @types/pg, so read without a cast). Read once, by
 * the client, when it is given a pool: the connections Conveyor opens
 * beside that pool are made as the pool's own are, as they always were.
 */
export function poolConnectionConfig(pool: pg.Pool): ConnectionConfig {
  return pool.options;
}

export function createPool(options: PoolOptions): pg.Pool {
  return poolOf(connectionConfig(options), options.max);
}

/** A pool of up to `max` connections made with `connection`. */
export function poolOf(connection: ConnectionConfig, max: number): pg.Pool {
  const pool = new pg.Pool({ ...connection, max });
  // An idle client whose server went away emits 'error' on the pool; without a
  // listener Node would crash the process. The next query reconnects.
  pool.on("error", () => {});
  return pool;
}

/**
 * A pool of one connection, made with `connection` (the client's: of a pool
 * Conveyor made or the caller's), whose session plans the statements
 * prepared on it as `planCacheMode` says: "force_custom_plan" plans every
 * call for its values (parsed once, planned each time),
 * "force_generic_plan" plans once. For the worker's claims (claim-store.ts).
 */
export function createPlanModePool(
  connection: ConnectionConfig,
  applicationName: string,
  planCacheMode: "force_custom_plan" | "force_generic_plan",
): pg.Pool {
  const pool = new pg.Pool({
    ...connection,
    max: 1,
    application_name: applicationName,
    onConnect: async (client: pg.ClientBase) => {
      await connection.onConnect?.(client);
      await client.query(`SET plan_cache_mode = ${planCacheMode}`);
    },
  });
  pool.on("error", () => {});
  return pool;
}

/**
 * A client checked out of `pool` whose connection may die while it is out.
 * pg emits 'error' on a checked-out client when its connection ends (a
 * server crash, a terminated backend, an idle-in-transaction timeout), and
 * an 'error' event nobody listens to ends the Node process. Here the error
 * is kept instead: the statement in flight fails on its own, and
 * `release()` then discards the connection rather than pooling it.
 */
export async function checkOut(pool: pg.Pool): Promise<pg.PoolClient> {
  const client = await pool.connect();
  let lost: Error | undefined;
  const onError = (error: Error): void => {
    lost ??= error;
  };
  client.on("error", onError);
  const release = client.release.bind(client);
  client.release = (error?: Error | boolean) => {
    client.off("error", onError);
    release(error || lost);
  };
  return client;
}

export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}
