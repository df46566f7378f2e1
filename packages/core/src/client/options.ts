import type { Logger } from "pino";
import pino from "pino";
import {
  DEFAULT_EXACT_COUNT_LIMIT,
  DEFAULT_POOL_SIZE,
  DEFAULT_QUERY_TIMEOUT_MS,
  DEFAULT_SCHEMA,
  DEFAULT_SEARCH_TIMEOUT_MS,
  DEFAULT_TRACING_ATTEMPTS,
  MAX_EXACT_COUNT_LIMIT,
} from "../core/defaults.js";
import { ConfigError } from "../core/errors.js";
import { type ConnectionConfig, connectionConfig, type Pool, poolConnectionConfig, poolOf } from "../store/db.js";
import type { AnyJobDefinition } from "../core/define-job.js";
import { collectSchedules } from "../core/schedules.js";
import { checkKnownFields, type KnownFields, quoted } from "../core/validate.js";

/** Options of `new Conveyor(options)`. Give `connectionString` or `pool`. */
export interface ConveyorOptions {
  /** Postgres URL. Give this or `pool`. Conveyor then owns the pool and closes it in `close()`. */
  connectionString?: string;
  /**
   * A `pg.Pool` you own (Conveyor never closes it). The connections a worker
   * opens beside it (LISTEN, claims) are made with the config this pool was
   * created with.
   */
  pool?: Pool;
  /** Job kinds this client knows: enqueue by kind name checks against them, workers run them. */
  jobs?: readonly AnyJobDefinition[];
  /**
   * Schema holding Conveyor's tables.
   * @defaultValue `DEFAULT_SCHEMA` ("conveyor")
   */
  schema?: string;
  /**
   * Pool size when Conveyor creates the pool.
   * @defaultValue `DEFAULT_POOL_SIZE` (10)
   */
  poolSize?: number;
  /**
   * When Conveyor creates the pool: the client-side deadline of each
   * statement, in ms, 0 for none.
   * A pool you pass keeps its own `query_timeout`.
   * @defaultValue `DEFAULT_QUERY_TIMEOUT_MS` (60 s)
   */
  queryTimeoutMs?: number;
  /** A pino logger. Default: pino at level "info" on stdout. */
  logger?: Logger;
  /**
   * What stands between Conveyor and PostgreSQL. `"none"` (default): direct
   * connections, or a pooler in session mode. `"transaction"`: a pooler in
   * transaction mode (PgBouncer `pool_mode = transaction`), which hands each
   * transaction whichever server connection is free. Then Conveyor:
   * - prepares no statement by name (each is sent unnamed and planned at each call);
   * - sets nothing on a session (no `random_page_cost`, TCP keepalives or plan mode; set
   *   them on the role or database instead);
   * - migrates in one transaction under a transaction-scoped lock;
   * - has workers LISTEN on `listenConnectionString` when given, else poll.
   */
  pooler?: "none" | "transaction";
  /**
   * With `pooler: "transaction"`: a direct URL to PostgreSQL (bypassing the
   * pooler) for the workers' LISTEN connections, one per worker. Default:
   * none, and workers find new jobs by polling (`pollIntervalMs`).
   */
  listenConnectionString?: string;
  /**
   * A read replica (a streaming standby) for what only reads and may lag
   * the primary by its replication delay: `getJob`, `listJobs`, dead
   * letters, flows, queue and worker overviews, throughput (and so the HTTP
   * API's and the dashboard's pages). Every write, and every read a write
   * depends on (idempotency, cancel, claims), stays on `connectionString`.
   * Default: none, everything on `connectionString`.
   */
  readConnectionString?: string;
  /**
   * The longest one statement of a search or count may run, in ms, 0 for
   * no bound (`listJobs`, `countJobs`, `overview`, the HTTP API's lists and
   * the dashboard). Each runs in its own short transaction with this
   * `statement_timeout`, which holds behind a pooler in transaction mode
   * too. A search that hits it throws `SearchTimeoutError` (narrow it by
   * queue, kind, status or a time range); a count answers the planner's
   * estimate instead. Must be below `queryTimeoutMs` when Conveyor creates
   * the pool.
   * @defaultValue `DEFAULT_SEARCH_TIMEOUT_MS` (5 s)
   */
  searchTimeoutMs?: number;
  /**
   * `countJobs` counts this many matching jobs one by one at most; above
   * it (or when counting hits `searchTimeoutMs`) the count is the
   * planner's estimate, flagged `estimated`. Per-queue counts (overview,
   * queue statistics, metrics) count at most `QUEUE_EXACT_COUNT_LIMIT`
   * (1,000), or this when lower. 1 to `MAX_EXACT_COUNT_LIMIT`.
   * @defaultValue `DEFAULT_EXACT_COUNT_LIMIT` (10,000)
   */
  exactCountLimit?: number;
  /**
   * OpenTelemetry spans for enqueues and attempts (docs/tracing.md). They
   * are made only when `@opentelemetry/api` is installed and a tracer
   * provider is registered; `false` turns them off even then. Default `{}`
   * (on, with `attempts: DEFAULT_TRACING_ATTEMPTS`, "link").
   */
  tracing?: false | TracingOptions;
}

/** Options of OpenTelemetry tracing (`ConveyorOptions.tracing`). */
export interface TracingOptions {
  /**
   * "link": each attempt's CONSUMER span starts a trace of its own, linked
   * to the PRODUCER span of its enqueue; "child": it is that span's child,
   * so one trace holds the request and the job (for short jobs).
   * @defaultValue `DEFAULT_TRACING_ATTEMPTS` ("link")
   */
  attempts?: "link" | "child";
}

/** `ConveyorOptions` after validation, defaults applied, frozen: what `conveyor.options` holds. */
export interface ResolvedConveyorOptions {
  /** The pool every statement goes through: the one given, or the one Conveyor created. */
  readonly pool: Pool;
  /** Whether Conveyor created the pool (then `close()` ends it). */
  readonly ownsPool: boolean;
  /** Registered job kinds, by kind. */
  readonly jobs: ReadonlyMap<string, AnyJobDefinition>;
  /** Schema holding Conveyor's tables. Default `DEFAULT_SCHEMA` ("conveyor"). */
  readonly schema: string;
  /** The logger in use. */
  readonly logger: Logger;
  /** What stands between Conveyor and PostgreSQL (`ConveyorOptions.pooler`). Default `"none"`. */
  readonly pooler: "none" | "transaction";
  /** Tracing: false when off, else its options with defaults applied. */
  readonly tracing: false | Readonly<Required<TracingOptions>>;
  /** The time bound of each search or count statement, in ms; 0 for none. Default `DEFAULT_SEARCH_TIMEOUT_MS` (5 s). */
  readonly searchTimeoutMs: number;
  /** Matching jobs `countJobs` counts one by one at most. Default `DEFAULT_EXACT_COUNT_LIMIT` (10,000). */
  readonly exactCountLimit: number;
}

const CONVEYOR_OPTION_FIELDS: KnownFields<ConveyorOptions> = {
  connectionString: true,
  pool: true,
  jobs: true,
  schema: true,
  poolSize: true,
  queryTimeoutMs: true,
  logger: true,
  pooler: true,
  listenConnectionString: true,
  readConnectionString: true,
  searchTimeoutMs: true,
  exactCountLimit: true,
  tracing: true,
};

// Schema names end up in NOTIFY channel names (max 63 bytes) as "<schema>:jobs".
const SCHEMA_PATTERN = /^[A-Za-z_][A-Za-z0-9_]{0,47}$/;

/**
 * Check and freeze the client's options, and resolve how its connections are
 * made: `connection` is handed to what opens connections beside the pool (a
 * worker's LISTEN and claim connections), so none of them reads a pool's
 * settings back. For a pool Conveyor creates, the settings it creates it
 * with; for a pool you pass, that pool's (see `poolConnectionConfig`).
 */
export function resolveConveyorOptions(options: ConveyorOptions): {
  options: ResolvedConveyorOptions;
  connection: ConnectionConfig;
  /** How workers open their LISTEN connection; null when they must poll (a transaction pooler without `listenConnectionString`). */
  listenConnection: ConnectionConfig | null;
  /** The read replica's pool (`readConnectionString`); null without one. */
  readPool: Pool | null;
} {
  checkKnownFields(options, CONVEYOR_OPTION_FIELDS, "an option of new Conveyor()", { ErrorType: ConfigError });
  if (options.pool && options.connectionString) throw new ConfigError("give either connectionString or pool, not both");
  if (!options.pool && !options.connectionString) throw new ConfigError("connectionString or pool is required");
  const schema = options.schema ?? DEFAULT_SCHEMA;
  if (!SCHEMA_PATTERN.test(schema)) {
    throw new ConfigError(`schema must be a letter or _ then up to 47 letters, digits or _, got ${JSON.stringify(schema)}`);
  }
  const poolSize = options.poolSize ?? DEFAULT_POOL_SIZE;
  if (!Number.isInteger(poolSize) || poolSize < 1) throw new ConfigError(`poolSize must be an integer >= 1, got ${quoted(poolSize)}`);
  const queryTimeoutMs = options.queryTimeoutMs ?? DEFAULT_QUERY_TIMEOUT_MS;
  if (!Number.isInteger(queryTimeoutMs) || queryTimeoutMs < 0) {
    throw new ConfigError(`queryTimeoutMs must be an integer >= 0 (0: no deadline), got ${quoted(queryTimeoutMs)}`);
  }
  const searchTimeoutMs = options.searchTimeoutMs ?? DEFAULT_SEARCH_TIMEOUT_MS;
  if (!Number.isInteger(searchTimeoutMs) || searchTimeoutMs < 0) {
    throw new ConfigError(`searchTimeoutMs must be an integer >= 0 (0: no bound), got ${quoted(searchTimeoutMs)}`);
  }
  // The client-side deadline would fire first, and discard the connection instead of answering SearchTimeoutError.
  if (!options.pool && queryTimeoutMs > 0 && (searchTimeoutMs === 0 || searchTimeoutMs >= queryTimeoutMs)) {
    throw new ConfigError(`searchTimeoutMs (${searchTimeoutMs}) must be between 1 and queryTimeoutMs (${queryTimeoutMs}), exclusive`);
  }
  const exactCountLimit = options.exactCountLimit ?? DEFAULT_EXACT_COUNT_LIMIT;
  if (!Number.isInteger(exactCountLimit) || exactCountLimit < 1 || exactCountLimit > MAX_EXACT_COUNT_LIMIT) {
    throw new ConfigError(`exactCountLimit must be an integer from 1 to ${MAX_EXACT_COUNT_LIMIT}, got ${quoted(exactCountLimit)}`);
  }
  const jobs = new Map<string, AnyJobDefinition>();
  for (const definition of options.jobs ?? []) {
    if (jobs.has(definition.kind)) throw new ConfigError(`jobs: kind "${definition.kind}" is defined twice`);
    jobs.set(definition.kind, definition);
  }
  collectSchedules(jobs.values()); // refuses one cron schedule name used by two kinds
  const pooler = options.pooler ?? "none";
  if (pooler !== "none" && pooler !== "transaction") throw new ConfigError(`pooler must be "none" or "transaction", got ${JSON.stringify(pooler)}`);
  if (options.listenConnectionString !== undefined && pooler !== "transaction") {
    throw new ConfigError('listenConnectionString is for pooler: "transaction"; without a pooler workers LISTEN on their own connection');
  }
  const sessionSettings = pooler === "none";
  const tracing = resolveTracing(options.tracing);
  const connection = options.pool
    ? poolConnectionConfig(options.pool)
    : connectionConfig({ connectionString: options.connectionString!, applicationName: "conveyor", queryTimeoutMs, sessionSettings });
  const listenConnection =
    pooler === "none"
      ? connection
      : options.listenConnectionString === undefined
        ? null
        : connectionConfig({ connectionString: options.listenConnectionString, applicationName: "conveyor-listen", queryTimeoutMs, sessionSettings: true });
  const pool = options.pool ?? poolOf(connection, poolSize);
  const resolved: ResolvedConveyorOptions = Object.freeze({
    pool,
    ownsPool: !options.pool,
    jobs,
    schema,
    logger: options.logger ?? pino({ level: "info" }),
    pooler,
    tracing,
    searchTimeoutMs,
    exactCountLimit,
  });
  const readPool =
    options.readConnectionString === undefined
      ? null
      : poolOf(connectionConfig({ connectionString: options.readConnectionString, applicationName: "conveyor-reads", queryTimeoutMs, sessionSettings }), poolSize);
  return { options: resolved, connection, listenConnection, readPool };
}

function resolveTracing(tracing: ConveyorOptions["tracing"]): ResolvedConveyorOptions["tracing"] {
  if (tracing === false) return false;
  if (tracing !== undefined) checkKnownFields(tracing, { attempts: true }, "a tracing option", { path: "tracing", ErrorType: ConfigError });
  const attempts = tracing?.attempts ?? DEFAULT_TRACING_ATTEMPTS;
  if (attempts !== "link" && attempts !== "child") throw new ConfigError(`tracing.attempts must be "link" or "child", got ${JSON.stringify(attempts)}`);
  return Object.freeze({ attempts });
}
