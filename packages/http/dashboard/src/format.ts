/**
 * Local date and time with seconds and the zone, e.g. "2025-01-31 14:03:07
 * UTC+01:00" ("UTC" when the browser's zone is UTC): the reader's clock may
 * not be the servers' or the logs', so the zone is always shown.
 */
export function formatTime(iso: string | null | undefined): string {
  if (!iso) return "—";
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ${clock(date)} ${zoneOf(date)}`;
}

/** "14:03:07 UTC+01:00": a time of day with its zone. */
export function formatClock(date: Date): string {
  return `${clock(date)} ${zoneOf(date)}`;
}

function clock(date: Date): string {
  const pad = (n: number) => String(n).padStart(2, "0");
  return `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`;
}

/** The browser's UTC offset at that moment (it changes with daylight saving): "UTC", "UTC+05:30", "UTC-04:00". */
export function zoneOf(date: Date): string {
  const offset = -date.getTimezoneOffset();
  if (offset === 0) return "UTC";
  const abs = Math.abs(offset);
  return `UTC${offset > 0 ? "+" : "-"}${String(Math.floor(abs / 60)).padStart(2, "0")}:${String(abs % 60).padStart(2, "0")}`;
}

/** A duration for people: 850 ms, 4.2 s, 3 min 5 s, 2 h 10 min, 3 d 4 h. */
export function formatDuration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return "—";
  if (ms < 1_000) return `${Math.max(0, Math.round(ms))} ms`;
  if (ms < 60_000) return `${(ms / 1_000).toFixed(1)} s`;
  const s = Math.floor(ms / 1_000);
  if (s < 3_600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  if (s < 86_400) return `${Math.floor(s / 3_600)} h ${Math.floor((s % 3_600) / 60)} min`;
  return `${Math.floor(s / 86_400)} d ${Math.floor((s % 86_400) / 3_600)} h`;
}

/** The round units an interval is named in, largest first. */
const ROUND_UNITS: ReadonlyArray<[number, string]> = [
  [86_400_000, "day"],
  [3_600_000, "hour"],
  [60_000, "minute"],
  [1_000, "second"],
];

/**
 * A rate's interval, for "60 per minute": a whole number of the largest
 * unit it is a whole number of ("minute", "5 minutes", "day"); an interval
 * that is none ("1.5 s", "250 ms") as `formatDuration` writes it.
 */
export function formatInterval(ms: number): string {
  for (const [size, unit] of ROUND_UNITS) {
    if (ms >= size && ms % size === 0) {
      const count = ms / size;
      return count === 1 ? unit : `${formatNumber(count)} ${unit}s`;
    }
  }
  return formatDuration(ms);
}

/** A rate limit in words: "60 per minute", "1 per 5 seconds". */
export function formatRateLimit(rate: { count: number; intervalMs: number }): string {
  return `${formatNumber(rate.count)} per ${formatInterval(rate.intervalMs)}`;
}

/** "12 s ago", from an ISO time. */
export function ago(iso: string | null | undefined): string {
  if (!iso) return "—";
  return `${formatDuration(Date.now() - new Date(iso).getTime())} ago`;
}

/** Between two ISO times; "running" while the second is missing, "—" without a start. */
export function between(start: string | null, end: string | null): string {
  if (!start) return "—";
  return end ? formatDuration(new Date(end).getTime() - new Date(start).getTime()) : "running";
}

/** A long id shortened for tables: the first 8 and last 4 characters. */
export function shortId(id: string): string {
  return id.length > 16 ? `${id.slice(0, 8)}…${id.slice(-4)}` : id;
}

/**
 * JSON for display, pretty-printed. Rendered as a text node, never as HTML:
 * payloads and errors come from callers and handlers.
 */
export function prettyJson(value: unknown): string {
  try {
    return JSON.stringify(value, null, 2) ?? String(value);
  } catch {
    return String(value);
  }
}

const WHOLE = new Intl.NumberFormat("en-US");

/** "1,234": a whole number with thousands separators (the same in every browser locale, as the docs and tests read it). */
export function formatNumber(value: number): string {
  return WHOLE.format(value);
}

/**
 * How many jobs a count says: "1 job", "1,234 jobs", or for an estimate
 * "about 8.1 million jobs" (two significant digits: the planner's estimate
 * is no more precise than that).
 */
export function formatJobCount(count: number, estimated: boolean): string {
  const noun = count === 1 && !estimated ? "job" : "jobs";
  if (!estimated) return `${formatNumber(count)} ${noun}`;
  return `about ${roughly(count)} ${noun}`;
}

/** 8,123,456 → "8.1 million"; 12,345 → "12,000"; 950 → "950". */
export function roughly(value: number): string {
  if (value >= 1_000_000_000) return `${trimmed(value / 1_000_000_000)} billion`;
  if (value >= 1_000_000) return `${trimmed(value / 1_000_000)} million`;
  if (value < 1_000) return formatNumber(value);
  const magnitude = 10 ** (Math.floor(Math.log10(value)) - 1);
  return formatNumber(Math.round(value / magnitude) * magnitude);
}

function trimmed(value: number): string {
  return value >= 10 ? String(Math.round(value)) : value.toFixed(1).replace(/\.0$/, "");
}

/** "12.5%" from a rate in 0..1; "—" when there is none. */
export function formatRate(rate: number | null): string {
  if (rate === null) return "—";
  const percent = rate * 100;
  return `${percent === 0 || percent >= 10 ? percent.toFixed(0) : percent.toFixed(1)}%`;
}
