import type { Logger } from "pino";
import pino from "pino";
import { DEFAULT_POOL_SIZE, DEFAULT_QUERY_TIMEOUT_MS, DEFAULT_SCHEMA } from "../core/defaults.js";
import { ConfigError } from "../core/errors.js";
import { type ConnectionConfig, connectionConfig, type Pool, poolConnectionConfig, poolOf } from "../store/db.js";
import type { AnyJobDefinition } from "../core/define-job.js";
import { collectSchedules } from "../core/schedules.js";

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
  /** Schema holding Conveyor's tables. Default `DEFAULT_SCHEMA` ("conveyor"). */
  schema?: string;
  /** Pool size when Conveyor creates the pool. Default `DEFAULT_POOL_SIZE` (10). */
  poolSize?: number;
  /**
   * When Conveyor creates the pool: the client-side deadline of each
   * statement, in ms, 0 for none. Default `DEFAULT_QUERY_TIMEOUT_MS` (60 s).
   * A pool you pass keeps its own `query_timeout`.
   */
  queryTimeoutMs?: number;
  /** A pino logger. Default: pino at level "info" on stdout. */
  logger?: Logger;
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
}

// Schema names end up in NOTIFY channel names (max 63 bytes) as "<schema>:jobs".
const SCHEMA_PATTERN = /^[A-Za-z_][A-Za-z0-9_]{0,47}$/;

/**
 * Check and freeze the client's options, and resolve how its connections are
 * made: `connection` is handed to what opens connections beside the pool (a
 * worker's LISTEN and claim connections), so none of them reads a pool's
 * settings back. For a pool Conveyor creates, the settings it creates it
 * with; for a pool you pass, that pool's (see `poolConnectionConfig`).
 */
export function resolveConveyorOptions(options: ConveyorOptions): { options: ResolvedConveyorOptions; connection: ConnectionConfig } {
  if (options.pool && options.connectionString) throw new ConfigError("give either connectionString or pool, not both");
  if (!options.pool && !options.connectionString) throw new ConfigError("connectionString or pool is required");
  const schema = options.schema ?? DEFAULT_SCHEMA;
  if (!SCHEMA_PATTERN.test(schema)) {
    throw new ConfigError(`schema must be a letter or _ then up to 47 letters, digits or _, got ${JSON.stringify(schema)}`);
  }
  const poolSize = options.poolSize ?? DEFAULT_POOL_SIZE;
  if (!Number.isInteger(poolSize) || poolSize < 1) throw new ConfigError(`poolSize must be an integer >= 1, got ${poolSize}`);
  const queryTimeoutMs = options.queryTimeoutMs ?? DEFAULT_QUERY_TIMEOUT_MS;
  if (!Number.isInteger(queryTimeoutMs) || queryTimeoutMs < 0) {
    throw new ConfigError(`queryTimeoutMs must be an integer >= 0 (0: no deadline), got ${queryTimeoutMs}`);
  }
  const jobs = new Map<string, AnyJobDefinition>();
  for (const definition of options.jobs ?? []) {
    if (jobs.has(definition.kind)) throw new ConfigError(`jobs: kind "${definition.kind}" is defined twice`);
    jobs.set(definition.kind, definition);
  }
  collectSchedules(jobs.values()); // refuses one cron schedule name used by two kinds
  const connection = options.pool
    ? poolConnectionConfig(options.pool)
    : connectionConfig({ connectionString: options.connectionString!, applicationName: "conveyor", queryTimeoutMs });
  const pool = options.pool ?? poolOf(connection, poolSize);
  const resolved: ResolvedConveyorOptions = Object.freeze({
    pool,
    ownsPool: !options.pool,
    jobs,
    schema,
    logger: options.logger ?? pino({ level: "info" }),
  });
  return { options: resolved, connection };
}
