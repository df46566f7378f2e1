import { isoOrNull } from "../wire/serialize.js";

/**
 * Human output for the CLI: aligned columns, two spaces apart, headers in
 * capitals, trailing spaces trimmed. Cells are single-line: control
 * characters in stored text (payload strings, error messages) are shown
 * escaped, so a value cannot break the table or send terminal escapes.
 */
export function formatTable(headers: readonly string[], rows: ReadonlyArray<readonly string[]>): string {
  const all = [headers.map(String), ...rows.map((row) => row.map((value) => cell(value)))];
  const widths = headers.map((_, column) => Math.max(...all.map((row) => (row[column] ?? "").length)));
  return all.map((row) => row.map((value, column) => value.padEnd(widths[column]!)).join("  ").trimEnd()).join("\n") + "\n";
}

/** One line of safe text: control characters escaped (\n, \u001b…), long text cut. */
export function cell(value: string, max = 120): string {
  const escaped = value.replace(/[\u0000-\u001f\u007f-\u009f]/g, (char) =>
    char === "\n" ? "\\n" : char === "\t" ? "\\t" : `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
  return escaped.length > max ? `${escaped.slice(0, max - 1)}…` : escaped;
}

/** Label/value lines: `label:  value`, labels aligned. */
export function formatFacts(facts: ReadonlyArray<readonly [string, string]>): string {
  const width = Math.max(...facts.map(([label]) => label.length)) + 1;
  return facts.map(([label, value]) => `${`${label}:`.padEnd(width)}  ${cell(value, 400)}`).join("\n") + "\n";
}

/** ISO time, "-" for none, "out of range" for a stored time JavaScript cannot represent; never throws. */
export function isoOrDash(value: Date | string | null | undefined): string {
  if (value === null || value === undefined) return "-";
  return isoOrNull(value) ?? "out of range";
}

/** "4.2 s", "3 min", for ages and durations. */
export function humanDuration(ms: number): string {
  if (ms < 1_000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1_000).toFixed(1)} s`;
  if (ms < 3_600_000) return `${Math.floor(ms / 60_000)} min ${Math.floor((ms % 60_000) / 1_000)} s`;
  return `${Math.floor(ms / 3_600_000)} h ${Math.floor((ms % 3_600_000) / 60_000)} min`;
}

/** Write a value as one line of JSON on stdout. */
export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value)}\n`);
}
