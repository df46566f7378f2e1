import { resolve } from "node:path";
import type { Logger } from "pino";
import { ConfigError } from "../core/errors.js";
import { startEmbeddedPostgres } from "../embedded/embedded-postgres.js";

export interface OpenDatabase {
  connectionString: string;
  /** "env" when DATABASE_URL was set, else "embedded". */
  source: "env" | "embedded";
  /** Stops the embedded server if this process started it; otherwise nothing. */
  close(): Promise<void>;
}

/**
 * The CLI's one place that reads the environment for the database:
 * DATABASE_URL when set, else the embedded server under ./.conveyor
 * (started, or found already running by another Conveyor process).
 */
export async function openDatabase(log: Logger): Promise<OpenDatabase> {
  const url = process.env.DATABASE_URL;
  if (url) {
    checkDatabaseUrl(url);
    return { connectionString: url, source: "env", close: async () => {} };
  }
  const embedded = await startEmbeddedPostgres({
    dataDir: resolve(process.cwd(), ".conveyor", "postgres"),
    logger: (line) => log.debug({ postgres: line.trim() }, "embedded postgres"),
  });
  log.info({ owned: embedded.owned }, embedded.owned ? "started embedded PostgreSQL" : "using the embedded PostgreSQL another Conveyor process started");
  return { connectionString: embedded.connectionString, source: "embedded", close: () => embedded.stop() };
}

const URL_SCHEMES = new Set(["postgres:", "postgresql:", "socket:"]);

/**
 * Refuse a DATABASE_URL that is not a PostgreSQL URL before connecting: the
 * driver would read `postgres//host` as a host named "base" and fail with a
 * DNS error. The message never repeats the value, which may hold a password.
 * A Unix socket directory (`/var/run/postgresql dbname`) passes, as the driver accepts it.
 */
export function checkDatabaseUrl(url: string): void {
  if (url.startsWith("/")) return;
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch {
    parsed = undefined;
  }
  if (!parsed || !URL_SCHEMES.has(parsed.protocol) || !url.slice(parsed.protocol.length).startsWith("//")) {
    throw new ConfigError("DATABASE_URL is not a PostgreSQL URL: expected postgres://user:password@host:port/database");
  }
}
