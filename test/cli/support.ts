/**
 * The built CLI (`node dist/src/cli/main.js`) as a real process, against the
 * test database: run a command to its end, or start a long-running one and
 * stop it by PID.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import pino from "pino";
import type { Conveyor } from "../../packages/core/src/index.js";
import { testDatabaseUrl } from "../helpers/database.js";
import { waitFor } from "../helpers/wait-for.js";

export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
export const CORE_ROOT = resolve(REPO_ROOT, "packages", "core");
export const CLI = resolve(CORE_ROOT, "dist", "src", "cli", "main.js");
export const silent = pino({ level: "silent" });

export function assertBuilt(): void {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: run \`npm run build\` before these tests (npm test does)`);
}

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  /** Written to stdin, which is then closed. */
  input?: string;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  timeoutMs?: number;
}

/** The environment every CLI test process gets: the test database, quiet logs unless a test asks. */
export function cliEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return { ...process.env, DATABASE_URL: testDatabaseUrl(), NODE_OPTIONS: "", ...extra };
}

/** Run `conveyor <args>` to its end (killed by PID after `timeoutMs`). */
export function runCli(args: readonly string[], options: RunOptions = {}): Promise<CliResult> {
  assertBuilt();
  return new Promise((resolveResult, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      cwd: options.cwd ?? REPO_ROOT,
      env: options.env ?? cliEnv(),
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout!.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    child.stderr!.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`conveyor ${args.join(" ")} did not finish within ${options.timeoutMs ?? 60_000} ms\n${stdout}\n${stderr}`));
    }, options.timeoutMs ?? 60_000);
    child.once("error", reject);
    child.once("close", (code) => {
      clearTimeout(timer);
      resolveResult({ code, stdout, stderr });
    });
    child.stdin!.end(options.input ?? "");
  });
}

/** Lines of stderr that are not blank. */
export function stderrLines(result: CliResult): string[] {
  return result.stderr.split("\n").filter((line) => line.trim() !== "");
}

/** A long-running CLI process (dev), its output, and a bounded stop by PID. */
export class CliServer {
  readonly child: ChildProcess;
  stdout = "";
  stderr = "";
  readonly exited: Promise<number | null>;

  constructor(args: readonly string[], options: { env: NodeJS.ProcessEnv; cwd: string }) {
    assertBuilt();
    this.child = spawn(process.execPath, [CLI, ...args], { cwd: options.cwd, env: options.env, stdio: ["ignore", "pipe", "pipe"] });
    this.child.stdout!.setEncoding("utf8").on("data", (chunk: string) => (this.stdout += chunk));
    this.child.stderr!.setEncoding("utf8").on("data", (chunk: string) => (this.stderr += chunk));
    this.exited = new Promise((resolveExit) => this.child.once("exit", (code) => resolveExit(code)));
    running.add(this);
    void this.exited.then(() => running.delete(this));
  }

  get pid(): number {
    return this.child.pid!;
  }

  /** Wait until stdout matches `pattern`; fails early when the process exits. */
  async waitFor(pattern: RegExp, timeoutMs = 60_000): Promise<RegExpMatchArray> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const match = this.stdout.match(pattern);
      if (match) return match;
      if (this.child.exitCode !== null || this.child.signalCode !== null) {
        throw new Error(`process ${this.pid} exited before printing ${pattern}\n${this.output()}`);
      }
      if (Date.now() > deadline) throw new Error(`process ${this.pid} did not print ${pattern} within ${timeoutMs} ms\n${this.output()}`);
      await new Promise((wake) => setTimeout(wake, 50));
    }
  }

  /** Send `signal` and wait for the exit code; SIGKILL after `timeoutMs`. */
  async stop(signal: NodeJS.Signals, timeoutMs = 30_000): Promise<number | null> {
    if (this.child.exitCode === null && this.child.signalCode === null) process.kill(this.pid, signal);
    let timer: NodeJS.Timeout | undefined;
    const code = await Promise.race([
      this.exited,
      new Promise<"timeout">((wake) => (timer = setTimeout(() => wake("timeout"), timeoutMs))),
    ]);
    clearTimeout(timer);
    if (code === "timeout") {
      process.kill(this.pid, "SIGKILL");
      await this.exited;
      throw new Error(`process ${this.pid} did not exit within ${timeoutMs} ms of ${signal}\n${this.output()}`);
    }
    return code;
  }

  output(): string {
    return `--- stdout ---\n${this.stdout.slice(-4000)}\n--- stderr ---\n${this.stderr.slice(-4000)}`;
  }
}

const running = new Set<CliServer>();

/** SIGKILL, by PID, every server a test started that is still running. */
export async function killAllServers(): Promise<void> {
  const alive = [...running];
  for (const server of alive) {
    try {
      process.kill(server.pid, "SIGKILL");
    } catch {
      // already gone
    }
  }
  await Promise.all(alive.map((server) => server.exited));
}

/** Run an in-process worker for `kinds` until every job of those kinds is finished, then stop it. */
export async function runUntilFinished(conveyor: Conveyor, kinds: string[], timeoutMs = 30_000): Promise<void> {
  const worker = conveyor.worker({ kinds, concurrency: 4, pollIntervalMs: 50, logger: silent });
  await worker.start();
  try {
    await waitFor(
      `jobs of ${kinds.join(", ")} to finish`,
      async () => {
        const { rows } = await conveyor.pool.query(
          `SELECT count(*)::int AS n FROM "${conveyor.options.schema}".jobs WHERE kind = ANY($1) AND status IN ('queued', 'running', 'retrying')`,
          [kinds],
        );
        return rows[0].n === 0;
      },
      timeoutMs,
    );
  } finally {
    await worker.stop();
  }
}

/** `items.map(work)`, at most `limit` at a time (CLI processes are not free on a loaded machine). */
export async function mapLimit<T, R>(items: readonly T[], limit: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const lane = async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await work(items[index]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
  return results;
}
