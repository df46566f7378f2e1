import { MAX_PAYLOAD_DEPTH } from "../core/defaults.js";
import type { ValidationIssue } from "../core/errors.js";
import { textProblem } from "../core/json.js";

// Strict JSON, as the HTTP API reads request bodies and the CLI reads
// payloads and NDJSON lines, so a job sent either way is stored exactly or
// refused with the same words, never silently changed:
// - bytes that are not UTF-8 (a lenient decoder would swap in U+FFFD), or
//   malformed JSON: "malformed";
// - a number JSON.parse cannot hold exactly (12345678901234567890, 1e400),
//   named (send such values as strings); a `__proto__` key (JavaScript code
//   handling it can change prototypes); nesting past the payload limit; a
//   NUL character or a lone UTF-16 surrogate in any string or key, named
//   by its path (PostgreSQL stores neither as sent): "refused".
// The messages say "request body"; the CLI names its line or payload instead.

// The body may nest a few levels above a payload ({ jobs: [{ payload }] }).
// The slack lets the payload encoder refuse payloads that are too deep with
// the exact path; this limit only stops bodies no payload could be inside.
const MAX_BODY_DEPTH = MAX_PAYLOAD_DEPTH + 8;

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** Why strict JSON was not accepted: "malformed" (not UTF-8, not JSON) or "refused" (JSON that would not be kept exactly). */
export class StrictJsonError extends Error {
  constructor(
    /** "malformed": not UTF-8 or not JSON; "refused": JSON that would not be kept exactly. */
    readonly kind: "malformed" | "refused",
    message: string,
    /** The one value refused, when it is one: its path (dotted, "" for the whole) and what is wrong with it. */
    readonly issue?: ValidationIssue,
  ) {
    super(message);
    this.name = "StrictJsonError";
  }
}

/**
 * Parse JSON bytes strictly (see the rules above); an empty body is
 * `undefined`. Throws a StrictJsonError: "malformed" for bytes that are not
 * UTF-8 or not JSON, "refused" for JSON that would not be kept exactly.
 */
export function parseStrictJson(body: Buffer): unknown {
  if (body.length === 0) return undefined;
  let text: string;
  try {
    text = utf8.decode(body);
  } catch {
    throw new StrictJsonError("malformed", "request body is not valid UTF-8");
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new StrictJsonError("malformed", `request body is not valid JSON: ${(error as Error).message}`);
  }
  if (checkJsonText(text)) refuseUnstorableText(value);
  return value;
}

// Tokens that matter, in a text already known to be valid JSON: strings
// (matched whole, so digits and brackets inside them are skipped), numbers,
// and brackets. The unrolled string pattern avoids backtracking on long strings.
const TOKEN = /"[^"\\]*(?:\\.[^"\\]*)*"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|[[{]|[\]}]/g;
const FOLLOWED_BY_COLON = /\s*:/y;

/** Checks the rules above but the last; true when a string or key may hold text PostgreSQL cannot store. */
function checkJsonText(text: string): boolean {
  let unstorable = false;
  let depth = 0;
  TOKEN.lastIndex = 0;
  for (let match = TOKEN.exec(text); match !== null; match = TOKEN.exec(text)) {
    const token = match[0];
    const first = token.charCodeAt(0);
    if (first === 0x5b || first === 0x7b) {
      // [ or {
      // The limit users know is the payload's; the body's slack is an internal detail.
      if (++depth > MAX_BODY_DEPTH) refuse(`request body nests too deep for any payload (a payload nests at most ${MAX_PAYLOAD_DEPTH} levels)`);
    } else if (first === 0x5d || first === 0x7d) {
      depth--;
    } else if (first === 0x22) {
      FOLLOWED_BY_COLON.lastIndex = TOKEN.lastIndex;
      // Escapes can spell __proto__ too, so decode any key that could be one.
      if (FOLLOWED_BY_COLON.test(text) && (token.includes("\\") || token === '"__proto__"') && JSON.parse(token) === "__proto__") {
        refuse('the object key "__proto__" is not accepted (JavaScript code handling it could change object prototypes)');
      }
      // Valid UTF-8 holds neither NUL nor surrogates, so only a \u escape can bring one in.
      if (!unstorable && token.includes("\\u") && textProblem(JSON.parse(token) as string) !== undefined) unstorable = true;
    } else {
      checkNumber(token);
    }
  }
  return unstorable;
}

/** Refuse the first string or key (in document order) PostgreSQL cannot store, naming its path. */
function refuseUnstorableText(value: unknown): void {
  const visit = (node: unknown, path: string): void => {
    if (typeof node === "string") {
      const problem = textProblem(node);
      if (problem !== undefined) refuseAt(path, problem);
    } else if (Array.isArray(node)) {
      node.forEach((item, index) => visit(item, join(path, String(index))));
    } else if (node !== null && typeof node === "object") {
      for (const [key, item] of Object.entries(node)) {
        const problem = textProblem(key);
        if (problem !== undefined) refuseAt(`${path === "" ? "" : `${path} `}key ${JSON.stringify(key.slice(0, 40))}`, problem);
        visit(item, join(path, key));
      }
    }
  };
  visit(value, "");
}

const join = (path: string, name: string) => (path === "" ? name : `${path}.${name}`);

function refuseAt(path: string, problem: string): never {
  throw new StrictJsonError("refused", `${path === "" ? "request body" : path} ${problem}`, { path, message: problem });
}

function refuse(detail: string): never {
  throw new StrictJsonError("refused", detail);
}

/** Refuse a number literal that would not come back as the same decimal value after parsing. */
function checkNumber(literal: string): void {
  const parsed = Number(literal);
  const shown = literal.length > 40 ? `${literal.slice(0, 40)}…` : literal;
  if (!Number.isFinite(parsed)) refuse(`the number ${shown} is outside the range of a 64-bit float; send it as a string`);
  if (canonicalDecimal(literal) !== canonicalDecimal(String(parsed))) {
    refuse(`the number ${shown} has more digits than a 64-bit float keeps (it would be stored as ${parsed}); send it as a string`);
  }
}

/** A decimal literal as sign, significant digits and exponent: "1.50e2" and "150" give the same. */
function canonicalDecimal(literal: string): string {
  const match = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(literal);
  if (!match) return literal;
  const [, sign, whole, fraction = "", exponent = "0"] = match;
  let digits = (whole! + fraction).replace(/^0+/, "");
  if (digits === "") return "0"; // every zero, signed or not, is stored as 0
  let power = Number(exponent) - fraction.length;
  const trimmed = digits.replace(/0+$/, "");
  power += digits.length - trimmed.length;
  digits = trimmed;
  return `${sign}${digits}e${power}`;
}
