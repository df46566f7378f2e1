import { execFile } from "node:child_process";
import { accessSync, constants, existsSync, readdirSync, realpathSync } from "node:fs";
import { copyFile, mkdir, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { delimiter, dirname, join, resolve } from "node:path";
import { promisify } from "node:util";
import semver from "semver";
import { describe, expect, it } from "vitest";
import { CORE_ROOT, REPO_ROOT, requireBuild } from "../helpers/child-process.js";

/**
 * The `conveyor` command is `packages/core/bin/conveyor.js`, a committed
 * file: npm links it in a fresh clone before `prepare` builds the CLI, and
 * it refuses a Node older than engines.node in one line before loading
 * anything else. Each Node on this machine is tried: the one running the
 * tests, every `node` on PATH (the machine's own, older one when CI puts
 * its Node first) and the ones `.ci/run` installs under the temp dir.
 */

const run = promisify(execFile);
const SHIM = resolve(CORE_ROOT, "bin", "conveyor.js");

interface Outcome {
  code: number;
  stdout: string;
  stderr: string;
}

async function outcome(file: string, args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): Promise<Outcome> {
  return run(file, args, { cwd: options.cwd ?? REPO_ROOT, env: options.env ?? process.env, timeout: 60_000 }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: { code?: number; stdout?: string; stderr?: string }) => ({ code: error.code ?? -1, stdout: error.stdout ?? "", stderr: error.stderr ?? "" }),
  );
}

const executable = (path: string): boolean => {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
};

/** Every distinct Node binary on this machine, with its version. */
async function nodes(): Promise<Array<{ path: string; version: string }>> {
  const candidates = [process.execPath, ...(process.env.PATH ?? "").split(delimiter).filter(Boolean).map((dir) => join(dir, "node"))];
  for (const entry of readdirSync(tmpdir())) {
    if (entry.startsWith("conveyor-ci-node")) candidates.push(join(tmpdir(), entry, "node_modules", "node", "bin", "node"));
  }
  const seen = new Map<string, { path: string; version: string }>();
  for (const path of candidates) {
    if (!existsSync(path) || !executable(path)) continue;
    const real = realpathSync(path);
    if (seen.has(real)) continue;
    const { stdout } = await run(path, ["-p", "process.versions.node"]);
    seen.set(real, { path, version: stdout.trim() });
  }
  return [...seen.values()];
}

const engines = async (): Promise<string> =>
  (JSON.parse(await readFile(resolve(CORE_ROOT, "package.json"), "utf8")) as { engines: { node: string } }).engines.node;

describe("the conveyor command", () => {
  it("checks for the Node major that engines.node admits, and is the package's bin", async () => {
    const shim = await readFile(SHIM, "utf8");
    expect(Number(/^const MIN_NODE_MAJOR = (\d+);$/m.exec(shim)?.[1])).toBe(semver.minVersion(await engines())!.major);
    const manifest = JSON.parse(await readFile(resolve(CORE_ROOT, "package.json"), "utf8")) as { bin: Record<string, string>; files: string[] };
    expect(manifest.bin).toEqual({ conveyor: "./bin/conveyor.js" });
    expect(manifest.files).toContain("bin");
  });

  it("refuses a Node older than engines.node in one line, exiting 1", async (context) => {
    const range = await engines();
    const older = (await nodes()).filter((node) => !semver.satisfies(node.version, range));
    if (older.length === 0) context.skip("no Node older than engines.node on this machine");
    requireBuild("src/cli/main.js");
    for (const node of older) {
      const result = await outcome(node.path, [SHIM, "--help"]);
      expect(result, node.path).toEqual({ code: 1, stdout: "", stderr: `conveyor: needs Node.js 22 or newer; this is v${node.version}\n` });
    }
  });

  it("runs the CLI on every Node that engines.node admits", async (context) => {
    const range = await engines();
    const supported = (await nodes()).filter((node) => semver.satisfies(node.version, range));
    if (supported.length === 0) context.skip("no Node that engines.node admits on this machine");
    requireBuild("src/cli/main.js");
    for (const node of supported) {
      const result = await outcome(node.path, [SHIM, "--help"]);
      expect(result.code, `${node.path}: ${result.stderr}`).toBe(0);
      expect(result.stdout).toMatch(/^Usage: conveyor /m);
    }
  });

  it("says in one line that the CLI is not built, where it is not", async (context) => {
    const range = await engines();
    const node = (await nodes()).find((candidate) => semver.satisfies(candidate.version, range));
    if (!node) context.skip("no Node that engines.node admits on this machine");
    const dir = await mkdtemp(join(tmpdir(), "conveyor-unbuilt-"));
    try {
      await mkdir(join(dir, "bin"));
      await copyFile(SHIM, join(dir, "bin", "conveyor.js"));
      await copyFile(resolve(CORE_ROOT, "package.json"), join(dir, "package.json")); // "type": "module", as in the package
      const result = await outcome(node!.path, [join(dir, "bin", "conveyor.js"), "--help"], { cwd: dir });
      expect(result).toEqual({ code: 1, stdout: "", stderr: "conveyor: the CLI is not built: run `npm run build` in the repository\n" });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("is what `npx conveyor` runs in the repository after `npm install`", async (context) => {
    const link = resolve(REPO_ROOT, "node_modules", ".bin", "conveyor");
    expect(existsSync(link), `${link} is missing: npm install links it`).toBe(true);
    expect(realpathSync(link)).toBe(realpathSync(SHIM));
    const range = await engines();
    const node = (await nodes()).find((candidate) => semver.satisfies(candidate.version, range));
    if (!node) context.skip("no Node that engines.node admits on this machine");
    requireBuild("src/cli/main.js");
    // npx runs the linked file through `#!/usr/bin/env node`: the first node on PATH.
    const env = { ...process.env, PATH: `${dirname(node!.path)}${delimiter}${process.env.PATH ?? ""}` };
    const result = await outcome("npx", ["--no-install", "conveyor", "--help"], { env });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^Usage: conveyor /m);
  });
});
