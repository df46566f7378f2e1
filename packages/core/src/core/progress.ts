import { MAX_PROGRESS_BYTES } from "./defaults.js";
import { ValidationError } from "./errors.js";
import { encodeJson } from "./json.js";

/**
 * Encode a value reported with `ctx.progress()` as the JSON text stored in
 * `jobs.progress`: any JSON value (checked as payloads are, see `encodeJson`),
 * at most `MAX_PROGRESS_BYTES` bytes of UTF-8. Throws `ValidationError` naming
 * `progress` otherwise.
 */
export function encodeProgress(value: unknown): string {
  const json = encodeJson(value, "progress");
  const bytes = Buffer.byteLength(json, "utf8");
  if (bytes > MAX_PROGRESS_BYTES) {
    const problem = `is ${bytes} bytes of JSON; the limit is MAX_PROGRESS_BYTES (${MAX_PROGRESS_BYTES})`;
    throw new ValidationError(`progress ${problem}`, [{ path: "progress", message: problem }]);
  }
  return json;
}
