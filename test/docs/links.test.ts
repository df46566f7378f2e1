import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "../helpers/child-process.js";

/**
 * Every relative link in README.md and docs/ resolves: the file exists, and
 * a `#anchor` names a heading of the target (as GitHub slugs it) or an
 * explicit `<a id>`. External links are not fetched. docs/api/ is TypeDoc's
 * output (`npm run docs`), generated and not checked in, so it is skipped.
 */

const GENERATED = resolve(REPO_ROOT, "docs/api");

function markdownFiles(dir: string): string[] {
  const files: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory() && path !== GENERATED) files.push(...markdownFiles(path));
    else if (entry.isFile() && entry.name.endsWith(".md")) files.push(path);
  }
  return files;
}

/** The text outside fenced code blocks and inline code spans, where links are links. */
function prose(markdown: string): string {
  return markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, "").replace(/`+[^`\n]*`+/g, "");
}

/** A heading's anchor as GitHub makes it: text without markup, lower case, punctuation dropped, spaces to hyphens. */
function githubSlug(heading: string): string {
  const text = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1") // links and images: their text
    .replace(/<[^>]+>/g, "") // HTML tags
    .replace(/[*`]/g, "") // emphasis and code marks
    .trim()
    .toLowerCase();
  return text.replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, "").replace(/ /g, "-");
}

/** Every anchor a markdown file offers: its headings' slugs (repeats numbered as GitHub does) and explicit ids. */
function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  const withoutCode = markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, "");
  for (const [, heading] of withoutCode.matchAll(/^#{1,6}[ \t]+(.+?)[ \t#]*$/gm)) {
    const slug = githubSlug(heading!);
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count === 0 ? slug : `${slug}-${count}`);
  }
  for (const [, id] of withoutCode.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(id!);
  return anchors;
}

/** Link targets: inline `[text](target)` and `![alt](target)`, and reference definitions `[label]: target`. */
function linkTargets(markdown: string): string[] {
  const text = prose(markdown);
  const inline = [...text.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((match) => match[1]!);
  const references = [...text.matchAll(/^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/gm)].map((match) => match[1]!);
  return [...inline, ...references];
}

function brokenLinks(file: string): string[] {
  const markdown = readFileSync(file, "utf8");
  const broken: string[] = [];
  for (const target of linkTargets(markdown)) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto: …: not ours to check
    const hash = target.indexOf("#");
    const pathPart = decodeURI(hash < 0 ? target : target.slice(0, hash));
    const anchor = hash < 0 ? undefined : decodeURIComponent(target.slice(hash + 1));
    const targetFile = pathPart === "" ? file : resolve(dirname(file), pathPart);
    const name = `${relative(REPO_ROOT, file)}: ${target}`;
    if (!targetFile.startsWith(REPO_ROOT) || !existsSync(targetFile)) {
      broken.push(`${name} (no such file)`);
      continue;
    }
    if (anchor === undefined || !targetFile.endsWith(".md") || statSync(targetFile).isDirectory()) continue;
    if (!anchorsOf(readFileSync(targetFile, "utf8")).has(anchor)) broken.push(`${name} (no such heading)`);
  }
  return broken;
}

describe("documentation links", () => {
  const files = [resolve(REPO_ROOT, "README.md"), ...markdownFiles(resolve(REPO_ROOT, "docs"))];

  it("are checked in the README and every guide", () => {
    expect(files.map((file) => relative(REPO_ROOT, file))).toEqual(expect.arrayContaining(["docs/README.md", "docs/reliability.md"]));
  });

  it("point at files that exist and headings they have", () => {
    expect(files.flatMap(brokenLinks)).toEqual([]);
  });

  it("slug headings as GitHub does", () => {
    expect(githubSlug("Queue limits and fairness")).toBe("queue-limits-and-fairness");
    expect(githubSlug("Progress, results and transactions in handlers")).toBe("progress-results-and-transactions-in-handlers");
    expect(githubSlug("`conveyor dev`: the dev stack")).toBe("conveyor-dev-the-dev-stack");
    expect(githubSlug("What is *not* promised")).toBe("what-is-not-promised");
    expect(githubSlug("Jobs, 10k / 1M waiting")).toBe("jobs-10k--1m-waiting");
    expect(githubSlug("[HTTP API](http-api.md) routes")).toBe("http-api-routes");
  });

  it("find a broken file, heading and in-file anchor", () => {
    const anchors = anchorsOf("# Title\n\n## Part\n\n## Part\n\n```\n# not a heading\n```\n<a id=\"kept\"></a>\n");
    expect([...anchors]).toEqual(["title", "part", "part-1", "kept"]);
    expect(linkTargets("[a](x.md#y) `[b](code.md)` ![c](img.svg)\n\n[d]: ref.md\n")).toEqual(["x.md#y", "img.svg", "ref.md"]);
  });
});
