import { DEFAULT_RETENTION_INTERVAL_MS } from "../core/defaults.js";
import { ConfigError } from "../core/errors.js";
import { resolveRetentionPolicy, type RetentionPolicy } from "../core/retention.js";
import { checkKnownFields, quoted } from "../core/validate.js";

/** The worker's periodic prune of old rows (worker option `retention`). */
export interface RetentionOptions {
  /** Delete succeeded and cancelled jobs finished longer ago than this. Default `DEFAULT_RETENTION_FINISHED_MS` (7 days). */
  finishedMs?: number;
  /** Delete dead letters (with their dead jobs) older than this. Default `DEFAULT_RETENTION_DEAD_LETTER_MS` (30 days). */
  deadLetterMs?: number;
  /** How often this worker prunes (±25% jitter). Default `DEFAULT_RETENTION_INTERVAL_MS` (5 minutes). */
  intervalMs?: number;
  /** Rows per delete statement, 1..10,000. Default `DEFAULT_RETENTION_BATCH_SIZE` (1,000). */
  batchSize?: number;
}

/** `RetentionOptions` with every default filled in and every value checked. */
export interface ResolvedRetentionOptions extends RetentionPolicy {
  /** As `RetentionOptions.intervalMs`. */
  readonly intervalMs: number;
}

/** Merge with the defaults and check, naming the field (`worker.retention.…`); `false` turns pruning off (null). */
export function resolveRetentionOptions(options: RetentionOptions | false | undefined): ResolvedRetentionOptions | null {
  if (options === false) return null;
  if (options !== undefined && (typeof options !== "object" || options === null)) {
    throw new ConfigError(`worker.retention must be an object or false, got ${quoted(options)}`);
  }
  const input = options ?? {};
  checkKnownFields(input, { finishedMs: true, deadLetterMs: true, intervalMs: true, batchSize: true }, "a retention option of a worker", {
    path: "worker.retention",
    ErrorType: ConfigError,
  });
  const policy = resolveRetentionPolicy(input, "worker.retention.", (message) => new ConfigError(message));
  const intervalMs = input.intervalMs ?? DEFAULT_RETENTION_INTERVAL_MS;
  if (typeof intervalMs !== "number" || !Number.isFinite(intervalMs) || intervalMs < 10) {
    throw new ConfigError(`worker.retention.intervalMs must be a number of ms >= 10, got ${quoted(input.intervalMs)}`);
  }
  return Object.freeze({ ...policy, intervalMs });
}
