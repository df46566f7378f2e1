import { readFile, realpath } from "node:fs/promises";
import { join } from "node:path";
import pg from "pg";
import { EmbeddedPostgresError } from "conveyor-jobs";
import type { Credentials } from "./credentials.js";

/** What a running server wrote to `postmaster.pid` in its data directory. */
export interface PostmasterInfo {
  pid: number;
  port: number;
}

/**
 * Read `<dataDir>/postmaster.pid`: line 1 is the server's pid, line 4 its
 * port. Null when there is no such file (no server) or it is still being
 * written.
 */
export async function readPostmasterPid(dataDir: string): Promise<PostmasterInfo | null> {
  let text: string;
  try {
    text = await readFile(join(dataDir, "postmaster.pid"), "utf8");
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") return null;
    throw error;
  }
  const lines = text.split("\n");
  const pid = Number.parseInt(lines[0] ?? "", 10);
  const port = Number.parseInt(lines[3] ?? "", 10);
  return pid > 0 && port > 0 ? { pid, port } : null;
}

/** True when a process with this pid exists (EPERM: it exists but belongs to another user). */
export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * Whether a live pid is the server of this data directory, rather than an
 * unrelated process that reused the pid of one that died. PostgreSQL works
 * in its data directory, so its cwd tells. Where /proc is missing the answer
 * is yes: the connection check that follows still has to pass.
 */
export async function isServerOf(pid: number, dataDir: string): Promise<boolean> {
  if (!(await hasProcfs())) return true;
  try {
    return (await realpath(`/proc/${pid}/cwd`)) === (await realpath(dataDir));
  } catch (error) {
    // EACCES: another user's process, most likely the server itself; ENOENT: it is gone (or a zombie).
    return (error as NodeJS.ErrnoException).code === "EACCES";
  }
}

async function hasProcfs(): Promise<boolean> {
  try {
    await readFile("/proc/self/cmdline");
    return true;
  } catch {
    return false;
  }
}

const AUTH_FAILED_CODES = new Set(["28P01", "28000"]);
const PROBE_TIMEOUT_MS = 2_000;

/**
 * Log in and run `SELECT 1`. True when the server answers; false when it
 * refuses connections or is starting up or shutting down. A refused password
 * throws: waiting would not help.
 */
export async function serverAnswers(port: number, credentials: Credentials, credentialsPath: string): Promise<boolean> {
  const client = new pg.Client({
    host: "127.0.0.1",
    port,
    user: credentials.user,
    password: credentials.password,
    database: "postgres",
    connectionTimeoutMillis: PROBE_TIMEOUT_MS,
  });
  client.on("error", () => {}); // a server stopping under us; the query below reports it
  try {
    await client.connect();
    await client.query("SELECT 1");
    return true;
  } catch (error) {
    const code = (error as { code?: string }).code ?? "";
    if (AUTH_FAILED_CODES.has(code)) {
      throw new EmbeddedPostgresError(
        `the PostgreSQL server on 127.0.0.1:${port} refused the password stored in ${credentialsPath}`,
        { cause: error },
      );
    }
    // Refused, reset, or 57P03 "the database system is starting up / shutting down".
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}
