import { ChildProcess } from "node:child_process";
import type pg from "pg";
import type { RunnerTask, RunnerTestFile } from "vitest";

/**
 * Things a test file opens and must close before it ends: pg pools and
 * connections, child processes, started workers, clients from
 * `createTestConveyor`. The per-file hooks (file-hooks.ts) fail the file
 * when any is still open after its `afterAll`, naming each one and where it
 * was created, then close them so the next file starts clean.
 *
 * pg and child processes are tracked wherever they are created (pg.Pool is
 * replaced by a subclass, pg.Client and ChildProcess have `connect`/`spawn`
 * wrapped), so a leak in product code shows up as well as one in a test.
 *
 * Also here, for the helpers: tasks to run when the file ends, and the
 * running file with its failures so far.
 */
export interface OpenResource {
  /** What it is, for the failure message: kind, name, where it was created. */
  describe(): string;
  isOpen(): boolean;
  /** Close it after reporting it, so the next test file starts clean. */
  close(): Promise<unknown>;
  /** Closing it closes others too (a test client's pool): these are reported and closed first. */
  owner?: boolean;
}

// One test file runs per process (vitest's forks pool isolates files), but
// pg and node:child_process are loaded once per process while this module
// is evaluated once per file: the set and the patches live on globalThis.
const REGISTRY = Symbol.for("conveyor.test.openResources");
type Registry = { resources: Set<OpenResource>; childProcesses: boolean; pg: boolean };
const registry: Registry = ((globalThis as Record<symbol, unknown>)[REGISTRY] as Registry | undefined) ??
  ((globalThis as Record<symbol, unknown>)[REGISTRY] = { resources: new Set<OpenResource>(), childProcesses: false, pg: false } as Registry);

const fileEndTasks = new Set<() => Promise<void>>();

/** Run `task` when the file ends, before its open resources are checked (helpers' own housekeeping). */
export function atFileEnd(task: () => Promise<void>): void {
  fileEndTasks.add(task);
}

/** Run and forget the tasks registered with `atFileEnd`. */
export async function runFileEndTasks(): Promise<void> {
  const tasks = [...fileEndTasks];
  fileEndTasks.clear();
  await Promise.all(tasks.map((task) => task()));
}

/** Track `resource` until it reports closed; returns a function that forgets it. */
export function trackResource(resource: OpenResource): () => void {
  registry.resources.add(resource);
  return () => registry.resources.delete(resource);
}

/** Resources still open; closed ones are forgotten. */
export function openResources(): OpenResource[] {
  for (const resource of registry.resources) if (!resource.isOpen()) registry.resources.delete(resource);
  return [...registry.resources];
}

/**
 * The test code that created something: the first stack frames outside
 * this module and node_modules, relative to the repository, e.g.
 * `test/cron.test.ts:39 < src/client/conveyor.ts:80`.
 */
export function creationSite(): string {
  const frames = (new Error().stack ?? "").split("\n").slice(1);
  const sites: string[] = [];
  for (const frame of frames) {
    const match = /(?:\(|at )(?:file:\/\/)?(\/[^\s():]+):(\d+):\d+\)?$/.exec(frame.trim());
    if (!match || match[1]!.includes("/node_modules/") || match[1]!.endsWith("/open-resources.ts")) continue;
    const path = match[1]!.replace(/^.*?\/((?:test|src)\/)/, "$1");
    sites.push(`${path}:${match[2]}`);
    if (path.startsWith("test/") && !path.startsWith("test/helpers/")) break; // the test's own line ends the chain
    if (sites.length === 4) break;
  }
  return sites.reverse().join(" > ") || "unknown site";
}

interface PoolInternals {
  ending: boolean;
  totalCount: number;
  options: { application_name?: string; connectionString?: string; max?: number };
}

interface ClientInternals {
  _ending: boolean;
  _ended: boolean;
  release?: unknown;
  connectionParameters: { application_name?: string; database?: string };
}

/**
 * Wrap ChildProcess#spawn and, with `pg` (integration tests; importing pg
 * costs unit test files 40-60 ms), pg.Pool and pg.Client#connect. Once per process.
 */
export async function installResourceTracking(options: { pg: boolean }): Promise<void> {
  if (!registry.childProcesses) {
    registry.childProcesses = true;
    trackChildProcesses();
  }
  if (options.pg && !registry.pg) {
    registry.pg = true;
    trackPg((await import("pg")).default);
  }
}

function trackPg(driver: typeof pg): void {
  const BasePool = driver.Pool;
  class TrackedPool extends BasePool {
    constructor(...args: ConstructorParameters<typeof BasePool>) {
      super(...args);
      const pool = this as unknown as PoolInternals & pg.Pool;
      const site = creationSite();
      // A pool that never connected holds nothing (a worker whose start() failed has one).
      let connected = false;
      pool.once("connect", () => (connected = true));
      trackResource({
        describe: () => `pg.Pool (application_name ${pool.options.application_name ?? "(none)"}, ${pool.totalCount} connection(s)) created at ${site}`,
        isOpen: () => connected && !pool.ending,
        close: () => pool.end(),
      });
    }
  }
  (driver as { Pool: typeof pg.Pool }).Pool = TrackedPool;

  const connect = driver.Client.prototype.connect as (this: pg.Client, ...args: unknown[]) => unknown;
  driver.Client.prototype.connect = function (this: pg.Client, ...args: unknown[]) {
    const client = this as unknown as ClientInternals & pg.Client;
    const site = creationSite();
    trackResource({
      describe: () =>
        `pg.Client (application_name ${client.connectionParameters.application_name ?? "(none)"}, database ${client.connectionParameters.database}) connected at ${site}`,
      // A pool's connections are the pool's: it is reported, not each of them.
      isOpen: () => !client._ending && !client._ended && typeof client.release !== "function",
      close: () => client.end(),
    });
    return connect.apply(this, args);
  } as typeof pg.Client.prototype.connect;
}

function trackChildProcesses(): void {
  // Every way of starting a process (spawn, fork, exec, execFile) goes through ChildProcess#spawn; its types do not list it.
  const prototype = ChildProcess.prototype as unknown as { spawn(this: ChildProcess, options: unknown): unknown };
  const spawn = prototype.spawn;
  prototype.spawn = function (this: ChildProcess, options: unknown) {
    const result = spawn.call(this, options);
    const child = this;
    const site = creationSite();
    const command = child.spawnargs.join(" ");
    trackResource({
      describe: () => `child process ${child.pid} (${command.length > 160 ? `${command.slice(0, 160)}…` : command}) spawned at ${site}`,
      isOpen: () => child.pid !== undefined && child.exitCode === null && child.signalCode === null,
      close: async () => {
        child.kill("SIGKILL");
      },
    });
    return result;
  };
}

// ---------------------------------------------------------------------------
// The running file and its failures, so a schema is kept when a test that used it failed.

let currentFile: RunnerTestFile | undefined;

/** Called by the per-file hooks with the file being run. */
export function setCurrentFile(file: RunnerTestFile | undefined): void {
  currentFile = file;
}

/** Failed tests (and hooks) in the running file so far; vitest marks a test failed before its afterEach hooks run. */
export function failuresSoFar(): number {
  const count = (task: RunnerTask): number =>
    (task.result?.state === "fail" ? 1 : 0) + ("tasks" in task ? task.tasks.reduce((sum: number, child: RunnerTask) => sum + count(child), 0) : 0);
  return currentFile ? count(currentFile) : 0;
}

/** The running file, relative to the repository, for messages. */
export function currentFileName(): string {
  return currentFile?.name ?? "(unknown file)";
}
