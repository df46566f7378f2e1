import { readdir, readFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "../helpers/child-process.js";

/**
 * The packages install under their own names (`conveyor` on npm is someone
 * else's), and everything a user copies from imports them by those names.
 */

const NAME = "conveyor-jobs";

async function filesIn(dir: string, extension: string): Promise<string[]> {
  const entries = await readdir(resolve(REPO_ROOT, dir));
  return entries.filter((entry) => entry.endsWith(extension)).map((entry) => join(dir, entry));
}

describe("the package name", () => {
  const manifest = async (dir: string): Promise<Record<string, unknown>> =>
    JSON.parse(await readFile(resolve(REPO_ROOT, dir, "package.json"), "utf8")) as Record<string, unknown>;

  it("is publishable as conveyor-jobs, with the command `conveyor` and an exports map", async () => {
    const core = await manifest("packages/core");
    expect(core.name).toBe(NAME);
    expect(core.private).toBeUndefined();
    expect(core.bin).toEqual({ conveyor: "./bin/conveyor.js" });
    expect(Object.keys(core.exports as object).sort()).toEqual([".", "./browser", "./package.json", "./server", "./testing"]);
  });

  it("has the API and the embedded server as packages of their own, at the core's version, and a private root", async () => {
    const core = await manifest("packages/core");
    for (const [dir, name] of [["packages/http", `${NAME}-http`], ["packages/embedded", `${NAME}-embedded`]] as const) {
      const part = await manifest(dir);
      expect(part.name).toBe(name);
      expect(part.private).toBeUndefined();
      expect(part.version).toBe(core.version);
      expect(part.peerDependencies).toEqual({ [NAME]: core.version });
      expect((core.peerDependencies as Record<string, string>)[name]).toBe(core.version);
    }
    const root = await manifest(".");
    expect(root.private).toBe(true);
    expect(root.workspaces).toEqual(["packages/core", "packages/embedded", "packages/http"]);
  });

  it("is what the README installs first, right after its introduction", async () => {
    const readme = await readFile(resolve(REPO_ROOT, "README.md"), "utf8");
    const [title, intro, firstBlock] = readme.split(/\n\n+/);
    expect(title).toBe("# Conveyor");
    expect(intro).toMatch(/^Background jobs for TypeScript on PostgreSQL\./);
    expect(firstBlock).toBe(`\`\`\`sh\nnpm install ${NAME}\n\`\`\``);
  });

  it("is the one README, docs and examples import from", async () => {
    const files = ["README.md", ...(await filesIn("docs", ".md")), ...(await filesIn("packages/core/examples", ".ts"))];
    const wrong: string[] = [];
    for (const file of files) {
      const text = await readFile(resolve(REPO_ROOT, file), "utf8");
      // Module specifiers of imports and re-exports, and prose naming one (from `conveyor-jobs-http`).
      for (const [, specifier] of text.matchAll(/(?:\bfrom|\bimport\(?)\s*["'`]([^"'`]+)["'`]/g)) {
        const ours = /^conveyor([-/]|$)/.test(specifier!) || /(^|\/)src\//.test(specifier!) || /(^|\/)dist\//.test(specifier!);
        if (ours && !/^conveyor-jobs(-http|-embedded|\/testing)?$/.test(specifier!)) wrong.push(`${file}: ${specifier}`);
      }
    }
    expect(wrong).toEqual([]);
  });
});
