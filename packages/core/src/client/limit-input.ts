import { MAX_RATE_INTERVAL_MS, MAX_RATE_LIMIT_COUNT } from "../core/defaults.js";
import { ValidationError } from "../core/errors.js";
import type { RateLimit } from "../core/queue-settings.js";
import { checkKnownFields } from "../core/validate.js";

// Checks shared by the queue and tenant limits (queue-limits.ts) and the
// limits per key (key-limits.ts): each refusal names the field.

/** Refuse an input with a ValidationError naming its field. */
export function refuse(path: string, message: string): never {
  throw new ValidationError(`${path} ${message}`, [{ path, message }]);
}

/** A count from 1 to `max`, or null for no limit. */
export function checkCount(value: unknown, path: string, max: number): number | null {
  if (value === null) return null;
  if (typeof value !== "number" || !Number.isInteger(value) || value < 1 || value > max) {
    refuse(path, `must be an integer from 1 to ${max} (or null for no limit), got ${JSON.stringify(value)}`);
  }
  return value;
}

/** A rate limit to set: each part set, or both null to remove it. */
export interface RateChange {
  set: boolean;
  count: number | null;
  intervalMs: number | null;
}

/** `rateLimit` as given to `queues.setLimits` or `keyLimits.set`: undefined keeps it, null removes it, else `{ count, intervalMs }`. */
export function checkRateLimit(value: RateLimit | null | undefined, path = "rateLimit"): RateChange {
  if (value === undefined) return { set: false, count: null, intervalMs: null };
  if (value === null) return { set: true, count: null, intervalMs: null };
  checkKnownFields(value, { count: true, intervalMs: true }, "a field of a rate limit", { path });
  const count = checkCount(value.count, `${path}.count`, MAX_RATE_LIMIT_COUNT);
  const intervalMs = checkCount(value.intervalMs, `${path}.intervalMs`, MAX_RATE_INTERVAL_MS);
  if (count === null) refuse(`${path}.count`, "is required");
  if (intervalMs === null) refuse(`${path}.intervalMs`, "is required");
  return { set: true, count, intervalMs };
}
