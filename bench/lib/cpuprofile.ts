import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples?: number[];
  timeDeltas?: number[];
}

/** The newest `.cpuprofile` file in `dir`, or null. */
export function newestProfile(dir: string): string | null {
  const files = readdirSync(dir)
    .filter((name) => name.endsWith(".cpuprofile"))
    .map((name) => join(dir, name))
    .sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs);
  return files[0] ?? null;
}

/** Where a frame's code comes from: a package, Conveyor's own dist, Node internals, or the idle/GC pseudo-frames. */
function areaOf(frame: ProfileNode["callFrame"]): string {
  const { url, functionName } = frame;
  if (!url) return functionName.startsWith("(") ? functionName : "(native)";
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)?.[1];
  if (pkg) return pkg;
  const own = /\/(?:dist\/(src\/[^/]+)|(bench)\/dist)\//.exec(url)?.slice(1).find(Boolean);
  if (own) return `conveyor ${own}`;
  if (url.startsWith("node:")) return "node internals";
  return url;
}

/**
 * Self time by area (package or part of Conveyor) and the top functions by
 * self time, as text. Self time is sampled: each sample's delta is charged
 * to the function on top of the stack.
 */
export function summarizeProfile(path: string, top = 25): string {
  const profile = JSON.parse(readFileSync(path, "utf8")) as CpuProfile;
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const self = new Map<number, number>();
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  for (let i = 0; i < samples.length; i++) self.set(samples[i]!, (self.get(samples[i]!) ?? 0) + (deltas[i] ?? 0) / 1000);
  const total = (profile.endTime - profile.startTime) / 1000;
  const byArea = new Map<string, number>();
  const byFunction = new Map<string, number>();
  for (const [id, ms] of self) {
    const frame = byId.get(id)!.callFrame;
    const area = areaOf(frame);
    byArea.set(area, (byArea.get(area) ?? 0) + ms);
    const file = frame.url.replace(/^.*\/(node_modules|dist)\//, "$1/");
    const key = `${frame.functionName || "(anonymous)"} ${file ? `${file}:${frame.lineNumber + 1}` : ""}`.trim();
    byFunction.set(key, (byFunction.get(key) ?? 0) + ms);
  }
  const pct = (ms: number) => `${((100 * ms) / total).toFixed(1).padStart(5)}%`;
  const lines = [`CPU profile ${path}: ${(total / 1000).toFixed(2)} s wall`, "", "Self time by area:"];
  for (const [area, ms] of [...byArea].sort((a, b) => b[1] - a[1]).slice(0, 20)) lines.push(`  ${pct(ms)} ${ms.toFixed(0).padStart(7)} ms  ${area}`);
  lines.push("", `Top ${top} functions by self time:`);
  for (const [name, ms] of [...byFunction].sort((a, b) => b[1] - a[1]).slice(0, top)) lines.push(`  ${pct(ms)} ${ms.toFixed(0).padStart(7)} ms  ${name}`);
  return lines.join("\n");
}
