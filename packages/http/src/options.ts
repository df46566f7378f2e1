import type { Logger } from "pino";
import { ConfigError } from "conveyor-jobs";
import { BULK_ACTION_SWEEP_INTERVAL_MS, checkKnownFields, DEFAULT_HTTP_BODY_LIMIT_BYTES, DEFAULT_HTTP_REQUEST_TIMEOUT_MS, type KnownFields } from "conveyor-jobs/server";

/** Options of `buildApp`. */
export interface ApiOptions {
  /** Largest request body in bytes; larger ones get 413. Default `DEFAULT_HTTP_BODY_LIMIT_BYTES` (1 MiB). */
  bodyLimit?: number;
  /** A request unanswered after this many ms gets 503. Default `DEFAULT_HTTP_REQUEST_TIMEOUT_MS` (30000). */
  requestTimeoutMs?: number;
  /** pino logger for request logs. Default: the client's logger, as a child with `component: "api"`. */
  logger?: Logger;
  /** Serve Swagger UI at `/docs`. Default true. */
  swaggerUi?: boolean;
  /**
   * How often, in ms, the app resumes bulk actions whose process is gone
   * (their walks then run in this process's client); 0 turns it off.
   * Default `BULK_ACTION_SWEEP_INTERVAL_MS` (15 s).
   */
  bulkActionSweepMs?: number;
}

export interface ResolvedApiOptions {
  readonly bodyLimit: number;
  readonly requestTimeoutMs: number;
  readonly logger: Logger;
  readonly swaggerUi: boolean;
  readonly bulkActionSweepMs: number;
}

/** Every field of `ApiOptions`, for the unknown-field rule. */
export const API_OPTION_FIELDS: KnownFields<ApiOptions> = { bodyLimit: true, requestTimeoutMs: true, logger: true, swaggerUi: true, bulkActionSweepMs: true };

/** Merge defaults, check each option (naming it), freeze. */
export function resolveApiOptions(options: ApiOptions, clientLogger: Logger): ResolvedApiOptions {
  checkKnownFields(options, API_OPTION_FIELDS, "an option of buildApp", { ErrorType: ConfigError });
  const bodyLimit = options.bodyLimit ?? DEFAULT_HTTP_BODY_LIMIT_BYTES;
  if (!Number.isSafeInteger(bodyLimit) || bodyLimit < 1) throw new ConfigError(`bodyLimit must be a whole number of bytes >= 1, got ${bodyLimit}`);
  const requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_HTTP_REQUEST_TIMEOUT_MS;
  if (!Number.isSafeInteger(requestTimeoutMs) || requestTimeoutMs < 1) {
    throw new ConfigError(`requestTimeoutMs must be a whole number of ms >= 1, got ${requestTimeoutMs}`);
  }
  const bulkActionSweepMs = options.bulkActionSweepMs ?? BULK_ACTION_SWEEP_INTERVAL_MS;
  if (!Number.isSafeInteger(bulkActionSweepMs) || bulkActionSweepMs < 0) {
    throw new ConfigError(`bulkActionSweepMs must be a whole number of ms >= 0 (0: off), got ${bulkActionSweepMs}`);
  }
  return Object.freeze({
    bodyLimit,
    requestTimeoutMs,
    logger: options.logger ?? clientLogger.child({ component: "api" }),
    swaggerUi: options.swaggerUi ?? true,
    bulkActionSweepMs,
  });
}
