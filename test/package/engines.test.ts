import { readFile } from "node:fs/promises";
import { resolve } from "node:path";
import semver from "semver";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "../helpers/child-process.js";

/**
 * The Node versions package.json admits are ones every installed package
 * supports, so an install on any of them is quiet (no EBADENGINE) and
 * correct; CI runs on the lowest of them and types against it.
 */

interface Manifest {
  engines: { node: string };
  devDependencies: Record<string, string>;
}
interface Lockfile {
  packages: Record<string, { version?: string; dev?: boolean; engines?: { node?: string } }>;
}

const readJson = async <T>(path: string): Promise<T> => JSON.parse(await readFile(resolve(REPO_ROOT, path), "utf8")) as T;

describe("supported Node versions", () => {
  it("admit only versions that every package a user installs supports", async () => {
    const { engines } = await readJson<Manifest>("package.json");
    const lowest = semver.minVersion(engines.node)!.version;
    const { packages } = await readJson<Lockfile>("package-lock.json");
    const refusing = Object.entries(packages)
      .filter(([path, entry]) => path !== "" && !entry.dev && entry.engines?.node && !semver.satisfies(lowest, entry.engines.node))
      .map(([path, entry]) => `${path.replace(/^.*node_modules\//, "")}@${entry.version} needs node ${entry.engines!.node}`);
    expect(refusing, `package.json engines.node is ${engines.node}, so Node ${lowest} may install it`).toEqual([]);
  });

  it("are what CI runs on and what @types/node describes: the lowest major admitted", async () => {
    const manifest = await readJson<Manifest>("package.json");
    const lowestMajor = semver.minVersion(manifest.engines.node)!.major;
    const ciScript = await readFile(resolve(REPO_ROOT, ".ci/run"), "utf8");
    expect(Number(/^CI_NODE_MAJOR=(\d+)$/m.exec(ciScript)?.[1])).toBe(lowestMajor);
    expect(semver.minVersion(manifest.devDependencies["@types/node"]!)!.major).toBe(lowestMajor);
  });

  it("are the LTS lines the README names, each of which CI runs on", async () => {
    const manifest = await readJson<Manifest>("package.json");
    const readme = await readFile(resolve(REPO_ROOT, "README.md"), "utf8");
    const named = /It runs on Node\.js (\d+) and (\d+), the maintained LTS lines \((\d+) or newer\)/.exec(readme.replace(/\s+/g, " "));
    expect(named, "README.md says which Node versions Conveyor runs on").not.toBeNull();
    const [, oldest, newest, minimum] = named!.map(Number);
    expect(minimum).toBe(semver.minVersion(manifest.engines.node)!.major);
    const ciScript = await readFile(resolve(REPO_ROOT, ".ci/run"), "utf8");
    expect(Number(/^CI_NODE_MAJOR=(\d+)$/m.exec(ciScript)?.[1])).toBe(oldest);
    expect(Number(/^CI_SMOKE_NODE_MAJOR=(\d+)$/m.exec(ciScript)?.[1])).toBe(newest);
  });
});
