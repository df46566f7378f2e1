import { ValidationError } from "./errors.js";

const UNIT_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
const DURATION_PATTERN = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)?$/;

/**
 * Parse a human duration into milliseconds: a number with one unit
 * (`500ms`, `45s`, `30m`, `12h`, `7d`, `1.5h`) or a plain number of
 * milliseconds (`86400000`). Throws a ValidationError naming `field`.
 */
export function parseDuration(text: string, field = "duration"): number {
  const match = DURATION_PATTERN.exec(text.trim());
  const ms = match ? Number(match[1]) * UNIT_MS[(match[2] ?? "ms") as keyof typeof UNIT_MS] : Number.NaN;
  if (!Number.isFinite(ms)) {
    const message = `${field} must be a duration like 7d, 12h, 30m, 45s, 500ms or a number of ms, got ${JSON.stringify(text)}`;
    throw new ValidationError(message, [{ path: field, message }]);
  }
  return Math.round(ms);
}

/** The shortest exact spelling `parseDuration` reads back: `7d`, `36h`, `90s`, `1500ms`. */
export function formatDuration(ms: number): string {
  for (const unit of ["d", "h", "m", "s"] as const) {
    if (ms > 0 && ms % UNIT_MS[unit] === 0) return `${ms / UNIT_MS[unit]}${unit}`;
  }
  return `${ms}ms`;
}
