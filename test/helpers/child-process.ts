import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** The repository root (the workspace). */
export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");

/** The directory of one of the repository's packages: `core` (conveyor-jobs), `http` or `embedded`. */
export function packageRoot(name: "core" | "http" | "embedded"): string {
  return resolve(REPO_ROOT, "packages", name);
}

/** The core package's directory: child scripts import its build in `dist/`. */
export const CORE_ROOT = packageRoot("core");

/**
 * Child processes import the build, the JavaScript users run.
 * `npm test` builds first; running vitest alone needs `npm run build`.
 */
export function requireBuild(relativePath: string, name: "core" | "http" | "embedded" = "core"): string {
  const path = resolve(packageRoot(name), "dist", relativePath);
  if (!existsSync(path)) throw new Error(`${path} is missing: run \`npm run build\` before these tests (npm test does)`);
  return path;
}

/**
 * A child `node` process whose stdout is JSON, one message per line. The
 * messages arrive in order through `next()`; stderr is kept for failure
 * messages.
 */
export class JsonLinesProcess {
  readonly child: ChildProcess;
  private readonly messages: unknown[] = [];
  private readonly waiters: Array<(message: unknown) => void> = [];
  private stderr = "";
  private buffer = "";
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  constructor(script: string, args: readonly string[], env: NodeJS.ProcessEnv = process.env) {
    this.child = spawn(process.execPath, [script, ...args], { cwd: REPO_ROOT, env, stdio: ["pipe", "pipe", "pipe"] });
    this.child.stdout!.setEncoding("utf8").on("data", (chunk: string) => this.onStdout(chunk));
    this.child.stderr!.setEncoding("utf8").on("data", (chunk: string) => (this.stderr += chunk));
    this.exited = new Promise((resolve) => this.child.once("exit", (code, signal) => resolve({ code, signal })));
  }

  get pid(): number {
    return this.child.pid!;
  }

  /** The next message, or a rejection naming stderr when the process exits first or `timeoutMs` passes. */
  next<T = Record<string, unknown>>(timeoutMs = 30_000): Promise<T> {
    const queued = this.messages.shift();
    if (queued !== undefined) return Promise.resolve(queued as T);
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => fail(`no message within ${timeoutMs} ms`), timeoutMs);
      const fail = (why: string) => {
        const index = this.waiters.indexOf(deliver);
        if (index >= 0) this.waiters.splice(index, 1);
        reject(new Error(`child ${this.pid}: ${why}; stderr: ${this.stderr.trim() || "(empty)"}`));
      };
      const deliver = (message: unknown) => {
        clearTimeout(timer);
        resolve(message as T);
      };
      this.waiters.push(deliver);
      void this.exited.then(({ code, signal }) => {
        if (this.waiters.includes(deliver)) {
          clearTimeout(timer);
          fail(`exited (code ${code}, signal ${signal}) before sending a message`);
        }
      });
    });
  }

  /** Write one line to the child's stdin. */
  send(line: string): void {
    this.child.stdin!.write(`${line}\n`);
  }

  get stderrText(): string {
    return this.stderr;
  }

  private onStdout(chunk: string): void {
    this.buffer += chunk;
    const lines = this.buffer.split("\n");
    this.buffer = lines.pop() ?? "";
    for (const line of lines) {
      if (line.trim() === "") continue;
      let message: unknown;
      try {
        message = JSON.parse(line);
      } catch {
        this.stderr += `(stdout) ${line}\n`; // not a message: keep it for failure reports
        continue;
      }
      const waiter = this.waiters.shift();
      if (waiter) waiter(message);
      else this.messages.push(message);
    }
  }
}
