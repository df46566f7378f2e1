import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_SCHEMA } from "../../src/core/defaults.js";
import { REPO_ROOT, requireBuild } from "../helpers/child-process.js";
import { testDatabaseUrl } from "../helpers/database.js";

/**
 * The package as a user gets it: `npm pack` of the build, installed into a
 * fresh app beside only what the README's Quick start imports. The Quick
 * start is read from README.md by its marker, so the two cannot drift.
 */

const run = promisify(execFile);
const QUICK_START_MARKER = "<!-- quick-start:";

interface RepoManifest {
  name: string;
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
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
let manifest: RepoManifest;
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

beforeAll(async () => {
  requireBuild("src/index.js"); // packs the build as it is; `npm test` builds first
  manifest = JSON.parse(await readFile(resolve(REPO_ROOT, "package.json"), "utf8")) as RepoManifest;
  appDir = await mkdtemp(join(tmpdir(), "conveyor-packed-app-"));
  // --ignore-scripts: `prepare` would rebuild what is already built.
  const packed = await run("npm", ["pack", "--ignore-scripts", "--silent", "--pack-destination", appDir], { cwd: REPO_ROOT });
  const tarball = packed.stdout.trim().split("\n").at(-1)!;
  // The same version ranges the repository uses, so a warm npm cache serves them.
  const app = {
    name: "packed-app",
    private: true,
    type: "module",
    dependencies: {
      [manifest.name]: `file:./${tarball}`,
      zod: manifest.dependencies.zod, // the Quick start's validator, which the README asks users to install
      typescript: manifest.devDependencies.typescript,
      "@types/node": manifest.devDependencies["@types/node"],
    },
  };
  await writeFile(join(appDir, "package.json"), JSON.stringify(app, null, 2));
  await writeFile(join(appDir, "tsconfig.json"), JSON.stringify(APP_TSCONFIG, null, 2));
  await mkdir(join(appDir, "src"));
  await writeFile(join(appDir, "src", "quick-start.ts"), quickStartCode(await readFile(resolve(REPO_ROOT, "README.md"), "utf8")));
  await copyFile(resolve(REPO_ROOT, "test/package/app/public-types.ts"), join(appDir, "src", "public-types.ts"));
  // --prefix: this app, whatever npm settings a surrounding `npm test` passes down.
  await run("npm", ["install", "--prefix", appDir, "--no-audit", "--no-fund", "--prefer-offline", "--loglevel=error"], { cwd: appDir });
  await onDatabase(testDatabaseUrl(), (client) => client.query(`CREATE DATABASE ${databaseName}`));
}, 300_000);

afterAll(async () => {
  await onDatabase(testDatabaseUrl(), (client) => client.query(`DROP DATABASE IF EXISTS ${databaseName} WITH (FORCE)`)).catch(() => {});
  if (appDir) await rm(appDir, { recursive: true, force: true });
}, 60_000);

describe("the packed package in a fresh app", () => {
  it("installs under its own name with the command `conveyor`", async () => {
    expect(manifest.name).toBe("conveyor-jobs");
    const installed = JSON.parse(await readFile(join(appDir, "node_modules", "conveyor-jobs", "package.json"), "utf8")) as {
      private?: boolean;
      bin: Record<string, string>;
    };
    expect(installed.private).toBeUndefined();
    expect(Object.keys(installed.bin)).toEqual(["conveyor"]);
    const help = await run(join(appDir, "node_modules", ".bin", "conveyor"), ["--help"], { cwd: appDir });
    expect(help.stdout).toMatch(/^Usage: conveyor /m);
  });

  it("compiles the README's Quick start and the public-type assertions under strict, checking the library's types", async () => {
    await tsc();
  });

  it("keeps the payload typed when library checks are skipped (no type falls back to `any`)", async () => {
    await tsc("--skipLibCheck", "true", "--noEmit");
  });

  it("runs the compiled Quick start against a real database, and its job succeeds", async () => {
    const url = databaseUrl(databaseName);
    const { stdout } = await run(process.execPath, [join(appDir, "out", "quick-start.js")], {
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
});
