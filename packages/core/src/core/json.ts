import { MAX_PAYLOAD_DEPTH } from "./defaults.js";
import { ValidationError } from "./errors.js";

/**
 * Serialise a payload to the JSON text stored in `jsonb`, refusing what
 * JSON.stringify would silently change or Postgres would reject later:
 * NaN/Infinity (stringify writes `null`), BigInt, functions, symbols,
 * cycles, NUL characters and lone UTF-16 surrogates (jsonb cannot hold
 * either), and nesting deeper than `MAX_PAYLOAD_DEPTH`; a
 * `ValidationError` naming the path (see `jsonProblem`).
 * `label` names the value in messages, e.g. `payload`.
 */
export function encodeJson(value: unknown, label = "payload"): string {
  const problem = jsonProblem(value, label);
  if (problem) throw new ValidationError(`${problem.path} ${problem.problem}`, [{ path: problem.path, message: problem.problem }]);
  return JSON.stringify(value);
}

/** What `jsonProblem` found in a value that JSON cannot carry as it is. */
export interface JsonProblem {
  /** Where, from the value's label down: `result._types.getTypeParser`, `payload.items.3`, `payload key "a"`. */
  path: string;
  /** What is there, as a noun: `a function`, `a BigInt`, `NaN`, `a circular reference`. */
  found: string;
  /** The refusal as a predicate of the path: `is a function, which JSON cannot represent`. */
  problem: string;
}

/**
 * The first place in `value` that `encodeJson` would refuse, depth first
 * in key order; undefined when the value is JSON. A `toJSON` method is
 * honoured (a Date is its ISO string), and `undefined` is refused only as
 * the whole value (inside objects JSON drops it).
 */
export function jsonProblem(value: unknown, label: string): JsonProblem | undefined {
  try {
    check(value, label, 0, new Set<object>());
    return undefined;
  } catch (error) {
    if (error instanceof Refusal) return error.problem;
    throw error;
  }
}

/** Thrown inside the walk only, so that the walk stops at the first problem. */
class Refusal {
  constructor(readonly problem: JsonProblem) {}
}

function check(value: unknown, path: string, depth: number, seen: Set<object>): void {
  if (depth > MAX_PAYLOAD_DEPTH) fail(path, `nesting deeper than ${MAX_PAYLOAD_DEPTH} levels`, `nests deeper than ${MAX_PAYLOAD_DEPTH} levels`);
  switch (typeof value) {
    case "string":
      checkString(value, path);
      return;
    case "number":
      if (!Number.isFinite(value)) fail(path, String(value), `is ${value}, which JSON cannot represent`);
      return;
    case "boolean":
      return;
    case "bigint":
      fail(path, "a BigInt", "is a BigInt, which JSON cannot represent (send it as a string)");
    case "function":
    case "symbol":
      fail(path, `a ${typeof value}`, `is a ${typeof value}, which JSON cannot represent`);
    case "undefined":
      if (depth === 0) fail(path, "undefined", "is undefined");
      return; // dropped by JSON.stringify inside objects, as everywhere in JSON
    case "object":
      break;
  }
  if (value === null) return;
  const object = value as object;
  if (seen.has(object)) fail(path, "a circular reference", "contains a circular reference");
  if (typeof (object as { toJSON?: unknown }).toJSON === "function") {
    // Dates and similar: check what will actually be stored.
    check((object as { toJSON: () => unknown }).toJSON(), path, depth, seen);
    return;
  }
  seen.add(object);
  if (Array.isArray(object)) {
    object.forEach((item, index) => check(item, `${path}.${index}`, depth + 1, seen));
  } else {
    for (const [key, item] of Object.entries(object)) {
      checkString(key, `${path} key ${JSON.stringify(key.slice(0, 40))}`);
      check(item, `${path}.${key}`, depth + 1, seen);
    }
  }
  seen.delete(object);
}

// A lone surrogate is a high surrogate not followed by a low one, or a low one not preceded by a high one.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

function checkString(value: string, path: string): void {
  if (value.includes("\u0000")) fail(path, "a NUL character (\\u0000)", NUL_PROBLEM);
  if (LONE_SURROGATE.test(value)) fail(path, "a lone UTF-16 surrogate", LONE_SURROGATE_PROBLEM);
}

const NUL_PROBLEM = "contains a NUL character (\\u0000), which PostgreSQL cannot store";
const LONE_SURROGATE_PROBLEM = "contains a lone UTF-16 surrogate, which is not valid Unicode";

/**
 * Why PostgreSQL cannot store a string exactly (as text or in jsonb), in
 * words that follow its name; undefined when it can. JSON can carry both a
 * NUL character and a lone UTF-16 surrogate; PostgreSQL stores neither as
 * sent (it refuses them in jsonb, and a lone surrogate becomes U+FFFD in text).
 */
export function textProblem(value: string): string | undefined {
  if (value.includes("\u0000")) return NUL_PROBLEM;
  if (LONE_SURROGATE.test(value)) return LONE_SURROGATE_PROBLEM;
  return undefined;
}

function fail(path: string, found: string, problem: string): never {
  throw new Refusal({ path, found, problem });
}

/**
 * Make text safe to store in jsonb: NUL characters and lone surrogates are
 * replaced by U+FFFD. For error messages and stacks, which come from
 * anywhere and must never make the write that records them fail.
 */
export function storableText(value: string): string {
  return value.replace(/\u0000/g, "\uFFFD").replace(new RegExp(LONE_SURROGATE.source, "g"), "\uFFFD");
}
