import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { chmod, mkdtemp, readFile, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { packageRoot, REPO_ROOT, requireBuild } from "../helpers/child-process.js";
import { testDatabaseUrl } from "../helpers/database.js";

/**
 * `npm install conveyor-jobs` in a project that has nothing else: what it
 * puts on disk, and that it works there. zod, prom-client and
 * @opentelemetry/api are optional peers (the HTTP package brings zod and
 * prom-client; an app brings the Standard Schema validator it likes, and
 * prom-client when it wants a worker's metrics), the package ships no
 * source maps (they would point at sources it does not ship), and the only
 * @types it brings are @types/pg, whose Pool and PoolClient its public
 * types name, and the @types/node that one needs. Its declarations then
 * compile with no optional peer installed, and with all of them.
 */

/** The bound on what `du -sk node_modules` counts after installing the packed core alone, in bytes: 12 MB (11.3 MB when written, on 4 KiB blocks). */
const MAX_INSTALL_BYTES = 12_000_000;

/** The optional peers of the core that its own dependencies must not bring. */
const OPTIONAL_PEERS = ["zod", "prom-client", "@opentelemetry/api"];

const run = promisify(execFile);

interface Manifest {
  version: string;
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
  peerDependencies: Record<string, string>;
}

let dir: string;
let version: string;
const schema = `conveyor_bare_${randomBytes(6).toString("hex")}`;

async function npm(...args: string[]): Promise<string> {
  const { stdout } = await run("npm", [...args, "--prefix", dir, "--no-audit", "--no-fund", "--prefer-offline", "--loglevel=error"], { cwd: dir });
  return stdout;
}

/** The packed CLI, run by the Node running the tests (its bin would refuse an old one before doing anything). */
async function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const main = join(dir, "node_modules", "conveyor-jobs", "dist", "src", "cli", "main.js");
  return run(process.execPath, [main, ...args], { cwd: dir, env: { ...process.env, DATABASE_URL: testDatabaseUrl() }, timeout: 60_000 }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: { code?: number; stdout?: string; stderr?: string }) => ({ code: error.code ?? -1, stdout: error.stdout ?? "", stderr: error.stderr ?? "" }),
  );
}

async function filesUnder(root: string): Promise<string[]> {
  const entries = await readdir(root, { recursive: true, withFileTypes: true });
  return entries.filter((entry) => entry.isFile()).map((entry) => join(entry.parentPath, entry.name));
}

/** A payload schema written by hand, to the Standard Schema interface: no validator library at all. */
const APP_SOURCE = `
import { Conveyor, createWorkerMetrics, defineJob, type WorkerMetrics } from "conveyor-jobs";
import { JOB_STATUSES } from "conveyor-jobs/browser";
import { runHandler } from "conveyor-jobs/testing";

interface Size { width: number }
const size: {
  readonly "~standard": {
    readonly version: 1;
    readonly vendor: string;
    readonly validate: (value: unknown) => { value: Size } | { issues: ReadonlyArray<{ message: string }> };
    readonly types?: { readonly input: Size; readonly output: Size };
  };
} = {
  "~standard": {
    version: 1,
    vendor: "by-hand",
    validate: (value) =>
      typeof value === "object" && value !== null && typeof (value as { width?: unknown }).width === "number"
        ? { value: { width: (value as Size).width } }
        : { issues: [{ message: "width must be a number" }] },
  },
};

export const resize = defineJob({
  kind: "image.resize",
  schema: size,
  handler({ payload }) {
    const width: number = payload.width;
    // @ts-expect-error the schema has no height: the payload is typed from it, not any
    void payload.height;
    return { width };
  },
});

export async function use(conveyor: Conveyor): Promise<string> {
  // @ts-expect-error width must be a number
  await conveyor.enqueue(resize, { width: "640" });
  const { id } = await conveyor.enqueue(resize, { width: 640 });
  const { outcome } = await runHandler(resize, { width: 640 });
  const metrics: WorkerMetrics = await createWorkerMetrics();
  const worker = conveyor.worker({ metrics });
  // @ts-expect-error a worker's metrics may be none: null unless given
  void worker.metrics.registry;
  const text: string = await metrics.registry.metrics();
  return id + outcome + text + JOB_STATUSES.join();
}
`;

/**
 * Every public entry, with every optional peer installed: the server
 * entry's zod schemas, and an app's own prom-client registry given to the
 * worker's metrics (prom-client's types meet Conveyor's own there).
 */
const FULL_APP_SOURCE = `
import { Conveyor, createWorkerMetrics } from "conveyor-jobs";
import { JOB_STATUSES } from "conveyor-jobs/browser";
import { jobFields } from "conveyor-jobs/server";
import { createTestConveyor } from "conveyor-jobs/testing";
import { Registry } from "prom-client";

export async function use(conveyor: Conveyor): Promise<string> {
  const registry = new Registry();
  const metrics = await createWorkerMetrics({ registry });
  conveyor.worker({ metrics });
  metrics.claimed.inc({ kind: "image.resize", queue: "default" });
  // @ts-expect-error claimed counts by kind and queue, not by outcome
  metrics.claimed.inc({ outcome: "succeeded" });
  const { values } = await metrics.completed.get();
  void [jobFields, createTestConveyor, JOB_STATUSES];
  return (await registry.metrics()) + values.length;
}
`;

/** A worker runs a job without prom-client, and metrics asked for in code name the package. */
const NO_METRICS_SCRIPT = `
import { Conveyor, ConfigError, createWorkerMetrics, defineJob } from "conveyor-jobs";
const size = { "~standard": { version: 1, vendor: "by-hand", validate: (value) => ({ value }) } };
const resize = defineJob({ kind: "image.resize", schema: size, handler: () => ({ resized: true }) });
const conveyor = new Conveyor({ connectionString: process.env.DATABASE_URL, schema: process.env.CONVEYOR_SCHEMA, jobs: [resize] });
try {
  await conveyor.migrate();
  const worker = conveyor.worker({ pollIntervalMs: 50 });
  const { id } = await conveyor.enqueue(resize, { width: 640 });
  await worker.start();
  const job = await conveyor.waitFor(id, { timeoutMs: 30_000 });
  await worker.stop();
  const error = await createWorkerMetrics().then(() => null, (error) => error);
  console.log("result " + JSON.stringify({ status: job.status, metrics: worker.metrics, config: error instanceof ConfigError, code: error?.code, message: error?.message }));
} finally {
  await conveyor.close();
}
`;

/** The same job as a jobs module for the CLI. */
const JOBS_MODULE = `
import { defineJob } from "conveyor-jobs";
const size = { "~standard": { version: 1, vendor: "by-hand", validate: (value) => ({ value }) } };
export default [defineJob({ kind: "image.resize", schema: size, handler() {} })];
`;

const STRICT_TSCONFIG = {
  compilerOptions: {
    strict: true,
    skipLibCheck: false,
    noEmit: true,
    module: "NodeNext",
    moduleResolution: "NodeNext",
    target: "ES2022",
    lib: ["ES2023"],
    types: ["node"],
  },
  include: ["app.ts"],
};

async function compile(): Promise<void> {
  const compiler = join(dir, "node_modules", "typescript", "bin", "tsc");
  await run(process.execPath, [compiler, "-p", dir], { cwd: dir }).catch((error: { stdout?: string; stderr?: string }) => {
    throw new Error(`tsc failed in the bare app:\n${error.stdout ?? ""}${error.stderr ?? ""}`);
  });
}

beforeAll(async () => {
  requireBuild("src/index.js");
  version = (JSON.parse(await readFile(resolve(packageRoot("core"), "package.json"), "utf8")) as Manifest).version;
  dir = await mkdtemp(join(tmpdir(), "conveyor-bare-app-"));
  await chmod(dir, 0o755);
  await run("npm", ["pack", "--ignore-scripts", "--silent", "--pack-destination", dir, "-w", "conveyor-jobs"], { cwd: REPO_ROOT });
  await writeFile(join(dir, "package.json"), JSON.stringify({ name: "bare-app", private: true, type: "module" }, null, 2));
  await npm("install", `./conveyor-jobs-${version}.tgz`);
}, 300_000);

afterAll(async () => {
  const client = new pg.Client({ connectionString: testDatabaseUrl() });
  await client.connect();
  await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).finally(() => client.end());
  if (dir) await rm(dir, { recursive: true, force: true });
}, 60_000);

describe("the packed core, installed alone in an empty project", () => {
  it(`takes under ${MAX_INSTALL_BYTES / 1e6} MB on disk, without its optional peers, source maps or @types beyond pg's`, async () => {
    const { stdout } = await run("du", ["-sk", join(dir, "node_modules")]);
    const bytes = Number(stdout.split(/\s/)[0]) * 1024;
    expect(bytes, `node_modules takes ${(bytes / 1e6).toFixed(1)} MB`).toBeLessThan(MAX_INSTALL_BYTES);
    expect(OPTIONAL_PEERS.filter((name) => existsSync(join(dir, "node_modules", name)))).toEqual([]);
    const types = await readdir(join(dir, "node_modules", "@types"));
    expect(types.sort()).toEqual(["node", "pg"]);
    const maps = (await filesUnder(join(dir, "node_modules", "conveyor-jobs"))).filter((file) => file.endsWith(".map"));
    expect(maps).toEqual([]);
  });

  it("loads its entries and its command without zod", async () => {
    const { stdout } = await run(
      process.execPath,
      ["--input-type=module", "-e", 'const m = await import("conveyor-jobs"); await import("conveyor-jobs/testing"); console.log(typeof m.Conveyor);'],
      { cwd: dir },
    );
    expect(stdout).toBe("function\n");
    const help = await cli(["--help"]);
    expect(help.code, help.stderr).toBe(0);
    expect(help.stdout).toMatch(/^Usage: conveyor /m);
  });

  it("runs the commands that print JSON without zod, and names zod in one line where a command needs it", async () => {
    await writeFile(join(dir, "jobs.mjs"), JOBS_MODULE);
    await writeFile(join(dir, "lines.ndjson"), '{"kind":"image.resize","payload":{"width":640}}\n');
    expect(await cli(["migrate", "--schema", schema])).toMatchObject({ code: 0 });
    const listed = await cli(["jobs", "list", "--json", "--schema", schema]);
    expect(listed.code, listed.stderr).toBe(0);
    expect(await cli(["jobs", "enqueue", "--file", "lines.ndjson", "--jobs", "./jobs.mjs", "--schema", schema])).toEqual({
      code: 1,
      stdout: "",
      stderr: "conveyor: enqueue --file checks each line with zod, which is not installed: npm install zod\n",
    });
    expect(await cli(["jobs", "enqueue", "email.send", "--schema", schema])).toEqual({
      code: 1,
      stdout: "",
      stderr: "conveyor: the bundled example jobs (the default --jobs) use zod, which is not installed: npm install zod\n",
    });
  });

  it("runs a worker without prom-client, and names prom-client where metrics are asked for, in code and by --metrics-port", async () => {
    await writeFile(join(dir, "no-metrics.mjs"), NO_METRICS_SCRIPT);
    const { stdout } = await run(process.execPath, [join(dir, "no-metrics.mjs")], {
      cwd: dir,
      env: { ...process.env, DATABASE_URL: testDatabaseUrl(), CONVEYOR_SCHEMA: schema },
      timeout: 60_000,
    });
    // The default logger writes JSON lines to stdout too.
    const result = stdout.split("\n").find((line) => line.startsWith("result "));
    expect(result, stdout).toBeDefined();
    expect(JSON.parse(result!.slice("result ".length))).toEqual({
      status: "succeeded",
      metrics: null,
      config: true,
      code: "CONFIG",
      message: "worker metrics are prom-client metrics, and prom-client is not installed: npm install prom-client",
    });
    expect(await cli(["worker", "--jobs", "./jobs.mjs", "--metrics-port", "0", "--schema", schema])).toEqual({
      code: 1,
      stdout: "",
      stderr: "conveyor: worker metrics are prom-client metrics, and prom-client is not installed: npm install prom-client\n",
    });
  });

  it("compiles an app with a validator that is not zod, under strict, checking the library's types, with no optional peer", async () => {
    const repo = JSON.parse(await readFile(resolve(REPO_ROOT, "package.json"), "utf8")) as Manifest;
    await npm("install", "-D", `typescript@${repo.devDependencies.typescript}`, `@types/node@${repo.devDependencies["@types/node"]}`);
    expect(OPTIONAL_PEERS.filter((name) => existsSync(join(dir, "node_modules", name)))).toEqual([]);
    await writeFile(join(dir, "app.ts"), APP_SOURCE);
    await writeFile(join(dir, "tsconfig.json"), JSON.stringify(STRICT_TSCONFIG, null, 2));
    await compile();
  });

  it("compiles every public entry under strict, checking the library's types, with every optional peer", async () => {
    const peers = (JSON.parse(await readFile(resolve(packageRoot("core"), "package.json"), "utf8")) as Manifest).peerDependencies;
    await npm("install", ...OPTIONAL_PEERS.map((name) => `${name}@${peers[name]}`));
    await writeFile(join(dir, "full-app.ts"), FULL_APP_SOURCE);
    await writeFile(join(dir, "tsconfig.json"), JSON.stringify({ ...STRICT_TSCONFIG, include: ["app.ts", "full-app.ts"] }, null, 2));
    await compile();
  });
});
