import type { StandardSchemaV1 } from "@standard-schema/spec";
import {
  MAX_DELAY_MS,
  MAX_IDEMPOTENCY_KEY_LENGTH,
  MAX_LIMIT_KEY_LENGTH,
  MAX_MAX_ATTEMPTS,
  MAX_NAME_LENGTH,
  MAX_PRIORITY,
  MAX_QUOTED_VALUE_LENGTH,
  MAX_RUN_AT_MS,
  MAX_TENANT_LENGTH,
  MIN_PRIORITY,
  MIN_RUN_AT_MS,
  NAME_PATTERN,
} from "./defaults.js";
import { ConfigError, ValidationError, type ValidationIssue } from "./errors.js";

type ErrorClass = new (message: string) => Error;

/**
 * A refused value as an error message quotes it: JSON (so the string "10"
 * reads `"10"`, never like the number 10), cut after
 * `MAX_QUOTED_VALUE_LENGTH` (64) characters, with the length it had. What
 * JSON has no text for reads as JavaScript writes it: `NaN`, `Infinity`,
 * `10n`, `undefined`, a function's source.
 */
export function quoted(value: unknown): string {
  const isString = typeof value === "string";
  const text = isString ? value : jsonText(value);
  if (text.length <= MAX_QUOTED_VALUE_LENGTH) return isString ? JSON.stringify(text) : text;
  const cut = text.slice(0, MAX_QUOTED_VALUE_LENGTH);
  return `${isString ? JSON.stringify(cut) : cut}… (${text.length} characters)`;
}

/** JSON text for a value, or JavaScript's where JSON has none (or it would misread: NaN as null). */
function jsonText(value: unknown): string {
  if (typeof value === "number" && !Number.isFinite(value)) return String(value);
  if (typeof value === "bigint") return `${value}n`;
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value); // a cycle, or a BigInt inside
  }
}

function refuse(ErrorType: ErrorClass | typeof ValidationError, message: string, path: string): never {
  if (ErrorType === ValidationError) throw new ValidationError(message, [{ path, message }]);
  throw new (ErrorType as ErrorClass)(message);
}

/**
 * The fields an input type defines, listed once: a record over the type's
 * keys, so the compiler refuses a list that misses a field or names one the
 * type does not have.
 */
export type KnownFields<T> = { readonly [K in keyof T]-?: true };

/** Where a refused field is named: its path's prefix, and the error to throw. */
export interface FieldsAt {
  /** The object's own path (`unique`, `jobs.3`, `job "x": backoff`; one ending in `:` is followed by a space); empty for the argument itself. */
  path?: string;
  /** ValidationError (the default) for a call's input, ConfigError for options and definitions. */
  ErrorType?: ErrorClass | typeof ValidationError;
}

/**
 * The one rule for unknown fields, applied to every input object of the
 * library: a field its type does not define is refused, never ignored, so a
 * typo or a field from another call fails loudly instead of silently
 * changing nothing. The error names the first such field by its path and
 * lists the known ones; `what` says what the object is ("an enqueue
 * option"). A value that is not an object is refused too. The HTTP API
 * applies the same rule to every body (`additionalProperties: false`).
 */
export function checkKnownFields<T>(value: T, fields: KnownFields<T>, what: string, at: FieldsAt = {}): void {
  const { path = "", ErrorType = ValidationError } = at;
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    refuse(ErrorType, `${path || "input"} must be an object with fields ${Object.keys(fields).join(", ")}`, path);
  }
  const key = unknownField(value, fields);
  if (key === undefined) return;
  const field = path === "" ? key : `${path}${path.endsWith(":") ? " " : "."}${key}`;
  refuse(ErrorType, `${field} is not ${what} (known: ${Object.keys(fields).join(", ")})`, field);
}

/** The first field of `value` that `fields` does not list, if any: the test behind `checkKnownFields`, for a caller that builds its own error. */
export function unknownField<T>(value: T & object, fields: KnownFields<T>): string | undefined {
  return Object.keys(value).find((key) => !Object.hasOwn(fields, key));
}

/** Kinds and queues: short, printable identifiers. */
export function checkName(value: unknown, field: string, ErrorType: ErrorClass = ConfigError): asserts value is string {
  if (typeof value !== "string" || value.length === 0 || value.length > MAX_NAME_LENGTH || !NAME_PATTERN.test(value)) {
    refuse(
      ErrorType,
      `${field} must be 1-${MAX_NAME_LENGTH} characters of letters, digits and _ . : - /, got ${quoted(value)}`,
      field,
    );
  }
}

export function checkTenant(value: unknown, field = "tenant"): asserts value is string {
  if (typeof value !== "string" || value.length === 0 || value.length > MAX_TENANT_LENGTH || /[\u0000-\u001f]/.test(value)) {
    refuse(ValidationError, `${field} must be a non-empty string of at most ${MAX_TENANT_LENGTH} printable characters`, field);
  }
}

export function checkPriority(value: unknown, field = "priority", ErrorType: ErrorClass = ValidationError): asserts value is number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < MIN_PRIORITY || value > MAX_PRIORITY) {
    refuse(ErrorType, `${field} must be an integer from ${MIN_PRIORITY} to ${MAX_PRIORITY}, got ${String(value)}`, field);
  }
}

export function checkMaxAttempts(value: unknown, field = "maxAttempts", ErrorType: ErrorClass = ValidationError): asserts value is number {
  if (typeof value !== "number" || !Number.isInteger(value) || value < 1 || value > MAX_MAX_ATTEMPTS) {
    refuse(ErrorType, `${field} must be an integer from 1 to ${MAX_MAX_ATTEMPTS}, got ${String(value)}`, field);
  }
}

export function checkIdempotencyKey(value: unknown, field = "idempotencyKey"): asserts value is string {
  if (typeof value !== "string" || value.length === 0 || value.length > MAX_IDEMPOTENCY_KEY_LENGTH || value.includes("\u0000")) {
    refuse(ValidationError, `${field} must be a non-empty string of at most ${MAX_IDEMPOTENCY_KEY_LENGTH} characters without NUL`, field);
  }
}

/** A limit key: 1 to MAX_LIMIT_KEY_LENGTH characters, no control characters. */
export function checkLimitKey(value: unknown, field = "limitKey", ErrorType: ErrorClass = ValidationError): asserts value is string {
  if (typeof value !== "string" || value.length === 0 || value.length > MAX_LIMIT_KEY_LENGTH || /[\u0000-\u001f]/.test(value)) {
    refuse(ErrorType, `${field} must be a string of 1 to ${MAX_LIMIT_KEY_LENGTH} characters without control characters, got ${quoted(value)}`, field);
  }
}

/** A run time inside MIN_RUN_AT_MS (inclusive) .. MAX_RUN_AT_MS (exclusive), the bound the jobs table checks too. */
export function checkRunAt(value: unknown, field = "runAt"): asserts value is Date {
  if (!(value instanceof Date) || Number.isNaN(value.getTime())) refuse(ValidationError, `${field} must be a valid Date`, field);
  const ms = value.getTime();
  if (ms < MIN_RUN_AT_MS || ms >= MAX_RUN_AT_MS) {
    refuse(
      ValidationError,
      `${field} must be from ${new Date(MIN_RUN_AT_MS).toISOString()} to before ${RUN_AT_END}, got ${describeTime(ms)}`,
      field,
    );
  }
}

/** A delay of 0..MAX_DELAY_MS milliseconds. */
export function checkDelayMs(value: unknown, field = "delayMs", ErrorType: ErrorClass = ValidationError): asserts value is number {
  if (typeof value !== "number" || !Number.isFinite(value) || value < 0 || value > MAX_DELAY_MS) {
    refuse(ErrorType, `${field} must be a number from 0 to ${MAX_DELAY_MS} (10 years), got ${String(value)}`, field);
  }
}

// toISOString() writes years past 9999 with a sign and six digits; said plainly here.
const RUN_AT_END = "10000-01-01T00:00:00.000Z";

function describeTime(ms: number): string {
  const date = new Date(ms);
  return Number.isNaN(date.getTime()) ? String(ms) : date.toISOString();
}

/** Run a Standard Schema validator and return its output, or throw naming each path and rule. */
export async function validatePayload(schema: StandardSchemaV1, payload: unknown, kind: string): Promise<unknown> {
  let result = schema["~standard"].validate(payload);
  if (result instanceof Promise) result = await result;
  if (!result.issues) return result.value;
  const issues: ValidationIssue[] = result.issues.map((issue) => ({
    path: ["payload", ...(issue.path ?? []).map((part) => String(typeof part === "object" ? part.key : part))].join("."),
    message: issue.message,
  }));
  const summary = issues.map((issue) => `${issue.path}: ${issue.message}`).join("; ");
  throw new ValidationError(`invalid payload for job "${kind}": ${summary}`, issues);
}

/** A step's, sleep's or wait's name, an event's name: 1 to `max` characters without control characters. */
export function checkLabel(value: unknown, field: string, max: number, ErrorType: ErrorClass = ValidationError, allowEmpty = false): asserts value is string {
  if (typeof value !== "string" || (!allowEmpty && value.length === 0) || value.length > max || /[\u0000-\u001f]/.test(value)) {
    refuse(ErrorType, `${field} must be a string of ${allowEmpty ? 0 : 1} to ${max} characters without control characters, got ${quoted(value)}`, field);
  }
}
