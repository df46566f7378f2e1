import { resolve } from "node:path";
import type { Logger } from "pino";
import { ConfigError } from "../core/errors.js";
import { type HostList, parseHostList } from "../store/hosts.js";
import { loadOptionalPackage } from "../optional-packages.js";

export interface OpenDatabase {
  connectionString: string;
  /** CONVEYOR_POOLER: "transaction" when DATABASE_URL goes through a pooler in transaction mode. */
  pooler: "none" | "transaction";
  /** CONVEYOR_LISTEN_URL: a direct URL for workers' LISTEN behind a transaction pooler. */
  listenConnectionString?: string;
  /** "env" when DATABASE_URL was set, else "embedded". */
  source: "env" | "embedded";
  /** Stops the embedded server if this process started it; otherwise nothing. */
  close(): Promise<void>;
}

/**
 * The CLI's one place that reads the environment for the database:
 * DATABASE_URL when set, else the embedded server under ./.conveyor
 * (started, or found already running by another Conveyor process);
 * CONVEYOR_POOLER ("none" or "transaction") and CONVEYOR_LISTEN_URL say
 * whether DATABASE_URL goes through a transaction pooler and where workers
 * LISTEN then (see `ConveyorOptions.pooler`).
 */
export async function openDatabase(log: Logger): Promise<OpenDatabase> {
  const url = process.env.DATABASE_URL;
  const pooler = process.env.CONVEYOR_POOLER || "none";
  if (pooler !== "none" && pooler !== "transaction") throw new ConfigError(`CONVEYOR_POOLER must be "none" or "transaction"; got ${JSON.stringify(pooler)}`);
  const listenUrl = process.env.CONVEYOR_LISTEN_URL || undefined;
  if (listenUrl !== undefined) {
    if (pooler !== "transaction") throw new ConfigError('CONVEYOR_LISTEN_URL is for CONVEYOR_POOLER=transaction');
    checkDatabaseUrl(listenUrl, "CONVEYOR_LISTEN_URL");
  }
  if (url) {
    checkDatabaseUrl(url);
    return { connectionString: url, pooler, ...(listenUrl ? { listenConnectionString: listenUrl } : {}), source: "env", close: async () => {} };
  }
  if (pooler !== "none") throw new ConfigError("CONVEYOR_POOLER needs DATABASE_URL: the embedded server has no pooler");
  const { startEmbeddedPostgres } = await loadOptionalPackage("conveyor-jobs-embedded", "DATABASE_URL is not set, and the embedded PostgreSQL comes in the conveyor-jobs-embedded package");
  const embedded = await startEmbeddedPostgres({
    dataDir: resolve(process.cwd(), ".conveyor", "postgres"),
    logger: (line) => log.debug({ postgres: line.trim() }, "embedded postgres"),
  });
  log.info({ owned: embedded.owned }, embedded.owned ? "started embedded PostgreSQL" : "using the embedded PostgreSQL another Conveyor process started");
  return { connectionString: embedded.connectionString, pooler: "none", source: "embedded", close: () => embedded.stop() };
}

const URL_SCHEMES = new Set(["postgres:", "postgresql:", "socket:"]);

/**
 * Refuse a DATABASE_URL that is not a PostgreSQL URL before connecting: the
 * driver would read `postgres//host` as a host named "base" and fail with a
 * DNS error. The message never repeats the value, which may hold a password.
 * A Unix socket directory (`/var/run/postgresql dbname`) passes, as the driver accepts it.
 */
export function checkDatabaseUrl(url: string, name = "DATABASE_URL"): void {
  if (url.startsWith("/")) return;
  let hosts: HostList | null;
  try {
    hosts = parseHostList(url);
  } catch {
    throw new ConfigError(`${name} is not a PostgreSQL URL: a host list is host:port,host:port`);
  }
  if (hosts) {
    for (const one of hosts.urls) checkDatabaseUrl(one, name);
    return;
  }
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch {
    parsed = undefined;
  }
  if (!parsed || !URL_SCHEMES.has(parsed.protocol) || !url.slice(parsed.protocol.length).startsWith("//")) {
    throw new ConfigError(`${name} is not a PostgreSQL URL: expected postgres://user:password@host:port/database`);
  }
}
