import { readdir, readFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "../helpers/child-process.js";

/**
 * The package installs under its own name (`conveyor` on npm is someone
 * else's), and everything a user copies from imports it by that name.
 */

const NAME = "conveyor-jobs";

async function filesIn(dir: string, extension: string): Promise<string[]> {
  const entries = await readdir(resolve(REPO_ROOT, dir));
  return entries.filter((entry) => entry.endsWith(extension)).map((entry) => join(dir, entry));
}

describe("the package name", () => {
  it("is publishable as conveyor-jobs, with the command `conveyor` and an exports map", async () => {
    const manifest = JSON.parse(await readFile(resolve(REPO_ROOT, "package.json"), "utf8")) as Record<string, unknown>;
    expect(manifest.name).toBe(NAME);
    expect(manifest.private).toBeUndefined();
    expect(manifest.bin).toEqual({ conveyor: "./dist/src/cli/main.js" });
    expect(Object.keys(manifest.exports as object).sort()).toEqual([".", "./embedded", "./http", "./package.json", "./testing"]);
  });

  it("is what the README installs first, right after its introduction", async () => {
    const readme = await readFile(resolve(REPO_ROOT, "README.md"), "utf8");
    const [title, intro, firstBlock] = readme.split(/\n\n+/);
    expect(title).toBe("# Conveyor");
    expect(intro).toMatch(/^Background jobs for TypeScript on PostgreSQL\./);
    expect(firstBlock).toBe(`\`\`\`sh\nnpm install ${NAME}\n\`\`\``);
  });

  it("is the one README, docs and examples import from", async () => {
    const files = ["README.md", ...(await filesIn("docs", ".md")), ...(await filesIn("examples", ".ts"))];
    const wrong: string[] = [];
    for (const file of files) {
      const text = await readFile(resolve(REPO_ROOT, file), "utf8");
      // Module specifiers of imports and re-exports, and prose naming one (from `conveyor-jobs/http`).
      for (const [, specifier] of text.matchAll(/(?:\bfrom|\bimport\(?)\s*["'`]([^"'`]+)["'`]/g)) {
        const ours = /^conveyor(\/|$)/.test(specifier!) || /(^|\/)src\//.test(specifier!) || /(^|\/)dist\//.test(specifier!);
        if (ours && !/^conveyor-jobs(\/http|\/embedded)?$/.test(specifier!)) wrong.push(`${file}: ${specifier}`);
      }
    }
    expect(wrong).toEqual([]);
  });
});
