import { execFileSync, spawn, type ChildProcess } from "node:child_process";
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";

const PGBOUNCER = "/usr/sbin/pgbouncer";

// Shared by the benchmark (processing and enqueue through a pooler) and the
// tests (test/pooler, test/chaos/pooler.test.ts), which import it from here.

/** A PgBouncer this process started, in transaction mode, in front of one database. */
export interface PgBouncer {
  /** A URL through the pooler, to the same database and user as the target. */
  url: string;
  pid: number;
  /** Stop it (by PID) and delete its files. */
  stop(): Promise<void>;
}

/** Debian's pgbouncer, installed from Debian's packages when missing. */
export function ensurePgBouncer(): void {
  if (existsSync(PGBOUNCER)) return;
  execFileSync("apt-get", ["install", "-y", "pgbouncer"], { stdio: "ignore", env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" } });
  if (!existsSync(PGBOUNCER)) throw new Error("apt-get install pgbouncer did not provide /usr/sbin/pgbouncer");
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/**
 * Start PgBouncer in transaction mode in front of `targetUrl`, with a small
 * server pool (`poolSize`) so that clients share server connections and
 * anything relying on a session breaks. It runs as the `postgres` user
 * (PgBouncer refuses to run as root) in the foreground, as this process's
 * child, and is stopped by its PID. Installs Debian's pgbouncer when missing.
 */
export async function startPgBouncer(targetUrl: string, poolSize = 4): Promise<PgBouncer> {
  ensurePgBouncer();
  const target = new URL(targetUrl);
  const user = decodeURIComponent(target.username || "postgres");
  const password = decodeURIComponent(target.password);
  const database = decodeURIComponent(target.pathname.slice(1) || user);
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), "conveyor-pgbouncer-"));
  chmodSync(dir, 0o777);
  const server = [
    `host=${target.hostname}`,
    `port=${target.port || 5432}`,
    `user=${user}`,
    `dbname=${database}`,
    ...(password ? [`password=${password}`] : []),
  ].join(" ");
  writeFileSync(join(dir, "userlist.txt"), `"${user}" ""\n`);
  writeFileSync(
    join(dir, "pgbouncer.ini"),
    [
      "[databases]",
      `${database} = ${server}`,
      "[pgbouncer]",
      "listen_addr = 127.0.0.1",
      `listen_port = ${port}`,
      "unix_socket_dir =",
      "auth_type = trust",
      `auth_file = ${join(dir, "userlist.txt")}`,
      "pool_mode = transaction",
      `default_pool_size = ${poolSize}`,
      "max_client_conn = 500",
      "ignore_startup_parameters = extra_float_digits,options",
      "server_reset_query =",
      "server_login_retry = 1",
      `logfile = ${join(dir, "pgbouncer.log")}`,
      "",
    ].join("\n"),
  );
  for (const file of ["userlist.txt", "pgbouncer.ini"]) chmodSync(join(dir, file), 0o644);
  const child: ChildProcess = spawn(PGBOUNCER, ["-u", "postgres", join(dir, "pgbouncer.ini")], { stdio: "ignore" });
  const url = `postgres://${encodeURIComponent(user)}@127.0.0.1:${port}/${encodeURIComponent(database)}`;
  const stop = async (): Promise<void> => {
    if (child.pid !== undefined && child.exitCode === null) {
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      if ((await Promise.race([exited, sleep(5_000).then(() => "timeout")])) === "timeout") child.kill("SIGKILL");
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + 10_000;
  for (;;) {
    const client = new pg.Client({ connectionString: url });
    try {
      await client.connect();
      await client.query("SELECT 1");
      await client.end();
      break;
    } catch (error) {
      await client.end().catch(() => {});
      if (child.exitCode !== null || Date.now() > deadline) {
        const log = existsSync(join(dir, "pgbouncer.log")) ? readFileSync(join(dir, "pgbouncer.log"), "utf8") : "";
        await stop();
        throw new Error(`pgbouncer did not start: ${(error as Error).message}\n${log}`);
      }
      await sleep(100);
    }
  }
  return { url, pid: child.pid!, stop };
}
