import {
  DEFAULT_BACKOFF_BASE_MS,
  DEFAULT_BACKOFF_CAP_MS,
  DEFAULT_BACKOFF_JITTER,
  MAX_DELAY_MS,
} from "./defaults.js";
import { ConfigError } from "./errors.js";
import { checkKnownFields, quoted } from "./validate.js";

/** How long to wait before retrying a failed attempt. */
export interface BackoffPolicy {
  /**
   * Delay after the first failure.
   * @defaultValue `DEFAULT_BACKOFF_BASE_MS` (1 s)
   */
  baseMs?: number;
  /**
   * Longest delay, at most `MAX_DELAY_MS` (10 years).
   * @defaultValue `DEFAULT_BACKOFF_CAP_MS` (1 h)
   */
  capMs?: number;
  /**
   * Share of the delay that is random, 0..1.
   * @defaultValue `DEFAULT_BACKOFF_JITTER` (0.2)
   */
  jitter?: number;
}

/** A `BackoffPolicy` with every field set (defaults applied), validated and frozen. */
export type ResolvedBackoff = Readonly<Required<BackoffPolicy>>;

/**
 * Apply the defaults to a backoff policy and check it (base ≥ 0, cap ≥ base
 * and at most `MAX_DELAY_MS`, jitter 0..1); `field` names it in the
 * ConfigError thrown otherwise.
 */
export function resolveBackoff(policy: BackoffPolicy = {}, field = "backoff"): ResolvedBackoff {
  checkKnownFields(policy, { baseMs: true, capMs: true, jitter: true }, "a backoff setting", { path: field, ErrorType: ConfigError });
  const baseMs = policy.baseMs ?? DEFAULT_BACKOFF_BASE_MS;
  const capMs = policy.capMs ?? DEFAULT_BACKOFF_CAP_MS;
  const jitter = policy.jitter ?? DEFAULT_BACKOFF_JITTER;
  if (!Number.isFinite(baseMs) || baseMs < 0) throw new ConfigError(`${field}.baseMs must be a number >= 0, got ${quoted(baseMs)}`);
  if (!Number.isFinite(capMs) || capMs < baseMs) throw new ConfigError(`${field}.capMs must be >= ${field}.baseMs (${baseMs}), got ${quoted(capMs)}`);
  // A retry's run time is now + delay, which the jobs table bounds (jobs_run_at_bounded).
  if (capMs > MAX_DELAY_MS) throw new ConfigError(`${field}.capMs must be at most ${MAX_DELAY_MS} (10 years), got ${quoted(capMs)}`);
  if (!Number.isFinite(jitter) || jitter < 0 || jitter > 1) throw new ConfigError(`${field}.jitter must be between 0 and 1, got ${quoted(jitter)}`);
  return Object.freeze({ baseMs, capMs, jitter });
}

/**
 * Delay before the next attempt after `attempt` failed (attempt counts from 1).
 * Exponential, capped, then the jittered share is drawn uniformly from
 * `[delay·(1-jitter), delay]`: jitter only ever shortens, so the cap holds,
 * and workers that failed together spread out instead of retrying in lockstep.
 */
export function retryDelayMs(policy: ResolvedBackoff, attempt: number, random: () => number = Math.random): number {
  const exponent = Math.max(0, attempt - 1);
  // 2^exponent overflows to Infinity past ~1023, and Math.min handles that.
  const raw = Math.min(policy.capMs, policy.baseMs * 2 ** exponent);
  const spread = raw * policy.jitter;
  return Math.round(raw - spread * random());
}
