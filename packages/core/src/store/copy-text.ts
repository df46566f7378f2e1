import type { JobInsertRow } from "./job-insert-row.js";

// Rows for `COPY … FROM STDIN` in PostgreSQL's text format: one line per row,
// columns separated by tabs, \N for NULL, and a backslash escaping the four
// characters that would otherwise end a column or a line.

const SPECIAL = /[\\\t\n\r]/;
const SPECIAL_ALL = /[\\\t\n\r]/g;
const ESCAPES: Record<string, string> = { "\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r" };

/** A text value as one column of a COPY text line. */
export function copyText(value: string): string {
  return SPECIAL.test(value) ? value.replace(SPECIAL_ALL, (ch) => ESCAPES[ch]!) : value;
}

/**
 * A time given in epoch microseconds as timestamptz input. A Date holds
 * milliseconds; the transaction's now() has microseconds, and a delayed
 * job's run_at is now() plus its delay exactly as the INSERT statements
 * compute it in SQL.
 */
export function timestampFromMicros(micros: number): string {
  const millis = Math.floor(micros / 1000);
  const rest = String(micros - millis * 1000).padStart(3, "0");
  return `${new Date(millis).toISOString().slice(0, -1)}${rest}Z`;
}

/** When a row runs, in epoch microseconds, for a transaction whose now() is `nowMicros`. */
export function runAtMicros(row: JobInsertRow, nowMicros: number): number {
  if (row.runAt !== null) return row.runAt.getTime() * 1000;
  // now() + delay * interval '1 millisecond' rounds to whole microseconds.
  return row.delayMs !== null ? nowMicros + Math.round(row.delayMs * 1000) : nowMicros;
}

/**
 * COPY text lines, columns in the order of COPY_COLUMNS (sql/copy-columns.ts),
 * for rows without an idempotency key or a unique key (the COPY path cannot
 * settle conflicts; those rows go through INSERT).
 */
export function copyLines(rows: readonly JobInsertRow[], nowMicros: number): string {
  const now = timestampFromMicros(nowMicros);
  let text = "";
  for (const row of rows) {
    if (row.idempotencyKey !== null || row.unique !== null) throw new Error(`job ${row.id} has a key: it must be inserted, not copied`);
    const runAt = row.runAt === null && row.delayMs === null ? now : timestampFromMicros(runAtMicros(row, nowMicros));
    const traceContext = row.traceContext == null ? "\\N" : copyText(row.traceContext);
    const limitKey = row.limitKey == null ? "\\N" : copyText(row.limitKey);
    text += `${row.id}\t${copyText(row.tenant)}\t${copyText(row.queue)}\t${copyText(row.kind)}\t${copyText(row.payload)}\t${row.priority}\t${row.maxAttempts}\t${runAt}\t${traceContext}\t${limitKey}\n`;
  }
  return text;
}
