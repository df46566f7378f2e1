import { ValidationError } from "../core/errors.js";

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
