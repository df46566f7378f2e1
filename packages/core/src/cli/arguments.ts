import { InvalidArgumentError } from "commander";
import { MAX_LIST_LIMIT, MAX_PRIORITY, MIN_PRIORITY } from "../core/defaults.js";

// Argument parsers for the inspection commands; commander turns the thrown
// InvalidArgumentError into one line ("error: option '--limit <n>' argument '0' is invalid. …") and exit 1.

export function listLimit(value: string): number {
  const parsed = Number(value);
  if (!/^\d{1,7}$/.test(value) || parsed < 1 || parsed > MAX_LIST_LIMIT) {
    throw new InvalidArgumentError(`expected a whole number from 1 to ${MAX_LIST_LIMIT}`);
  }
  return parsed;
}

export function priority(value: string): number {
  const parsed = Number(value);
  if (!/^-?\d{1,4}$/.test(value) || parsed < MIN_PRIORITY || parsed > MAX_PRIORITY) {
    throw new InvalidArgumentError(`expected a whole number from ${MIN_PRIORITY} to ${MAX_PRIORITY}`);
  }
  return parsed;
}

export function nonNegativeMs(value: string): number {
  const parsed = Number(value);
  if (!/^\d+(\.\d+)?$/.test(value) || !Number.isFinite(parsed)) throw new InvalidArgumentError("expected a number of milliseconds >= 0");
  return parsed;
}

/** An ISO 8601 time with a zone (Z or +02:00), as the HTTP API takes `runAt`. */
export function isoTime(value: string): Date {
  const date = new Date(value);
  if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/.test(value) || Number.isNaN(date.getTime())) {
    throw new InvalidArgumentError("expected an ISO 8601 time with a zone, e.g. 2030-01-31T09:00:00Z");
  }
  return date;
}

const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

/** An id argument: refused before any database work when it is not a UUID. */
export function uuid(value: string): string {
  if (!UUID.test(value)) throw new InvalidArgumentError("expected a UUID");
  return value;
}
