import { DEFAULT_UNIQUE_ON_CONFLICT, DEFAULT_UNIQUE_STATES, MAX_UNIQUE_KEY_LENGTH } from "../core/defaults.js";
import { ValidationError } from "../core/errors.js";
import { checkKnownFields, quoted } from "../core/validate.js";
import { UNIQUE_CONFLICT_MODES, UNIQUE_STATES, type UniqueConflictMode, type UniqueOptions, type UniqueState } from "../core/unique.js";
import type { UniqueInsert } from "../store/job-insert-row.js";

function refuse(path: string, message: string): never {
  throw new ValidationError(`${path} ${message}`, [{ path, message }]);
}

/**
 * Validate the `unique` enqueue option and fill in its defaults. `priorityGiven`:
 * the caller named a priority, so a replacement sets it too.
 */
export function resolveUniqueOption(value: unknown, priorityGiven: boolean): UniqueInsert | null {
  if (value === undefined) return null;
  if (value === null || typeof value !== "object" || Array.isArray(value)) refuse("unique", "must be an object { key, states?, onConflict? }");
  checkKnownFields(value as UniqueOptions, { key: true, states: true, onConflict: true }, "a unique option", { path: "unique" });
  const { key, states, onConflict } = value as Record<string, unknown>;
  if (typeof key !== "string" || key.length === 0 || key.length > MAX_UNIQUE_KEY_LENGTH || key.includes("\u0000")) {
    refuse("unique.key", `must be a non-empty string of at most ${MAX_UNIQUE_KEY_LENGTH} characters without NUL, got ${quoted(key)}`);
  }
  return { key, states: resolveStates(states), onConflict: resolveMode(onConflict), replacePriority: priorityGiven };
}

function resolveStates(states: unknown): readonly UniqueState[] {
  if (states === undefined) return DEFAULT_UNIQUE_STATES;
  if (!Array.isArray(states) || states.length === 0) refuse("unique.states", `must be a non-empty array of ${UNIQUE_STATES.join(", ")}`);
  for (const [i, state] of states.entries()) {
    if (!(UNIQUE_STATES as readonly unknown[]).includes(state)) {
      refuse(`unique.states.${i}`, `must be one of ${UNIQUE_STATES.join(", ")}, got ${JSON.stringify(state)}`);
    }
  }
  // Every job starts queued: a key not held while queued could never be taken race-free later.
  if (!states.includes("queued")) refuse("unique.states", 'must include "queued" (every job starts queued)');
  return [...new Set(states as UniqueState[])];
}

function resolveMode(mode: unknown): UniqueConflictMode {
  if (mode === undefined) return DEFAULT_UNIQUE_ON_CONFLICT;
  if (!(UNIQUE_CONFLICT_MODES as readonly unknown[]).includes(mode)) {
    refuse("unique.onConflict", `must be one of ${UNIQUE_CONFLICT_MODES.join(", ")}, got ${JSON.stringify(mode)}`);
  }
  return mode as UniqueConflictMode;
}
