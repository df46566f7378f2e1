import { storableText } from "../core/json.js";
import type { StoredError } from "../core/model.js";

const MAX_MESSAGE = 4_000;
const MAX_STACK = 8_000;

/**
 * Turn whatever a handler threw into the error stored on the job and the
 * execution. Handlers may throw anything (strings, objects, undefined);
 * non-Errors are kept as readable text under the name "NonError".
 */
export function toStoredError(thrown: unknown): StoredError {
  if (thrown instanceof Error) {
    const stored: StoredError = { name: storableText(thrown.name || "Error"), message: storableText(String(thrown.message).slice(0, MAX_MESSAGE)) };
    if (thrown.stack) stored.stack = storableText(thrown.stack.slice(0, MAX_STACK));
    return stored;
  }
  return { name: "NonError", message: storableText(describe(thrown).slice(0, MAX_MESSAGE)) };
}

function describe(value: unknown): string {
  if (typeof value === "string") return value;
  try {
    const json = JSON.stringify(value);
    if (json !== undefined) return `handler threw a non-Error value: ${json}`;
  } catch {
    // circular or BigInt: fall through to String()
  }
  return `handler threw a non-Error value: ${String(value)}`;
}
