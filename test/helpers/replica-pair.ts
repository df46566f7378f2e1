/**
 * A primary and a streaming standby with synchronous replication, made with
 * Debian's PostgreSQL binaries (`pg_basebackup` is not among the embedded
 * server's), run as the `postgres` OS user in a temporary directory, on free
 * ports of 127.0.0.1. Both are stopped by the PID in their postmaster.pid.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, appendFileSync, chmodSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";
import { freePort } from "../worker-processes/process-helpers.js";
import { waitForProcessGone } from "./processes.js";

/** Where Debian's PostgreSQL server binaries are, newest major first; null when none is installed. */
export function debianPostgresBin(): string | null {
  for (const major of ["17", "16", "15"]) {
    const bin = `/usr/lib/postgresql/${major}/bin`;
    if (existsSync(join(bin, "pg_basebackup")) && existsSync(join(bin, "postgres"))) return bin;
  }
  return null;
}

function asPostgres(bin: string, command: string, args: string[]): string {
  return execFileSync("runuser", ["-u", "postgres", "--", join(bin, command), ...args], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
}

export class ReplicaPair {
  readonly dir = mkdtempSync(join(tmpdir(), "conveyor-replicas-"));
  primaryPort = 0;
  standbyPort = 0;

  constructor(private readonly bin: string) {
    chmodSync(this.dir, 0o777);
  }

  private get primaryDir(): string {
    return join(this.dir, "primary");
  }

  private get standbyDir(): string {
    return join(this.dir, "standby");
  }

  url(port: number): string {
    return `postgres://postgres@127.0.0.1:${port}/postgres`;
  }

  /** The libpq-style URL listing both hosts, primary first. */
  get hostListUrl(): string {
    return `postgres://postgres@127.0.0.1:${this.primaryPort},127.0.0.1:${this.standbyPort}/postgres`;
  }

  async start(): Promise<this> {
    this.primaryPort = await freePort();
    this.standbyPort = await freePort();
    asPostgres(this.bin, "initdb", ["-D", this.primaryDir, "-A", "trust", "-U", "postgres", "--no-sync"]);
    appendFileSync(
      join(this.primaryDir, "postgresql.conf"),
      [
        "",
        `port = ${this.primaryPort}`,
        "listen_addresses = '127.0.0.1'",
        `unix_socket_directories = '${this.dir}'`,
        "wal_level = replica",
        "max_wal_senders = 5",
        "wal_keep_size = '256MB'",
        "hot_standby = on",
        "synchronous_standby_names = 'standby1'",
        "synchronous_commit = on",
        "",
      ].join("\n"),
    );
    asPostgres(this.bin, "pg_ctl", ["-D", this.primaryDir, "-l", join(this.dir, "primary.log"), "-w", "start"]);
    asPostgres(this.bin, "pg_basebackup", ["-h", "127.0.0.1", "-p", String(this.primaryPort), "-U", "postgres", "-D", this.standbyDir, "-R", "-X", "stream", "--no-sync"]);
    appendFileSync(
      join(this.standbyDir, "postgresql.conf"),
      [
        "",
        `port = ${this.standbyPort}`,
        "cluster_name = 'standby1'",
        // Once promoted it has no standby of its own: waiting for one would stop every commit.
        "synchronous_standby_names = ''",
        "",
      ].join("\n"),
    );
    asPostgres(this.bin, "pg_ctl", ["-D", this.standbyDir, "-l", join(this.dir, "standby.log"), "-w", "start"]);
    await this.waitForSyncStandby();
    return this;
  }

  private async waitForSyncStandby(): Promise<void> {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const client = new pg.Client({ connectionString: this.url(this.primaryPort) });
      await client.connect();
      try {
        const { rows } = await client.query("SELECT sync_state FROM pg_stat_replication WHERE application_name = 'standby1'");
        if (rows[0]?.sync_state === "sync") return;
      } finally {
        await client.end();
      }
      if (Date.now() > deadline) throw new Error(`the standby never became synchronous\n${this.log("standby")}`);
      await sleep(100);
    }
  }

  /** The primary dies at once (SIGQUIT to its postmaster: no shutdown checkpoint, every backend gone). */
  async crashPrimary(): Promise<void> {
    await this.kill(this.primaryDir, "SIGQUIT");
  }

  /** Promote the standby; resolves once it takes writes. */
  promoteStandby(): void {
    asPostgres(this.bin, "pg_ctl", ["-D", this.standbyDir, "-w", "promote"]);
  }

  log(which: "primary" | "standby"): string {
    const file = join(this.dir, `${which}.log`);
    return existsSync(file) ? readFileSync(file, "utf8") : "";
  }

  private async kill(dataDir: string, signal: NodeJS.Signals): Promise<void> {
    const pidFile = join(dataDir, "postmaster.pid");
    if (!existsSync(pidFile)) return;
    const pid = Number.parseInt(readFileSync(pidFile, "utf8").split("\n")[0]!, 10);
    try {
      process.kill(pid, signal);
    } catch {
      return;
    }
    if (!(await waitForProcessGone(pid, 10_000))) process.kill(pid, "SIGKILL");
  }

  async cleanup(): Promise<void> {
    await this.kill(this.standbyDir, "SIGQUIT");
    await this.kill(this.primaryDir, "SIGQUIT");
    rmSync(this.dir, { recursive: true, force: true });
  }
}
