/**
 * A worker process for one system: `node bench/dist/worker-child.js <system> <variant> <target>`.
 * Driven over IPC by lib/worker-process.ts: it loads the system's library,
 * starts a worker when told, counts handler calls (reporting the time of
 * chosen counts, and for the latency run each job's start time), and on
 * `stop` shuts the worker down and reports its peak RSS (and, when asked,
 * its RSS every so many jobs).
 */
import { readFileSync } from "node:fs";
import { now, sleep } from "./lib/clock.js";
import { loadSystem } from "./systems/index.js";
import { type Payload, PRESSURE_JOB_MS, type RunningWorker, type SystemName, type WorkerVariant } from "./systems/system.js";

export type ToChild =
  | { type: "clock"; id: number }
  | { type: "start"; milestones: number[]; recordStarts: boolean; rssEvery: number }
  | { type: "progress" }
  | { type: "stop" };

export type FromChild =
  | { type: "loaded" }
  | { type: "clock"; id: number; t: number }
  | { type: "started"; t: number }
  | { type: "milestone"; count: number; t: number }
  | { type: "progress"; count: number; t: number }
  | { type: "stopped"; count: number; maxRssKb: number; cpuMs: number; starts: Array<[number, number]>; rss: Array<[number, number]> }
  | { type: "error"; message: string };

/**
 * Peak resident set of this process in kB: VmHWM from /proc on Linux.
 * Not resourceUsage().maxRSS: Linux carries that high-water mark across
 * fork and exec, so a child would report the bench process's own peak.
 */
function peakRssKb(): number {
  try {
    const match = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync("/proc/self/status", "utf8"));
    if (match) return Number(match[1]);
  } catch {
    // not Linux
  }
  return process.resourceUsage().maxRSS;
}

const [systemName, variant, target] = process.argv.slice(2) as [SystemName, WorkerVariant, string];
const send = (message: FromChild) => process.send!(message);

let count = 0;
let milestones = new Set<number>();
let starts: Array<[number, number]> | null = null;
/** Every `rssEvery` handler calls (0: never), the count and the resident set in kB. */
let rssEvery = 0;
const rss: Array<[number, number]> = [];
let worker: RunningWorker | null = null;
/** CPU time (µs) used before the worker started: loading the libraries is not the worker's work. */
let cpuAtStart: number | null = null;

function countJob(payload: Payload): void {
  count++;
  if (starts) starts.push([payload.n, now()]);
  if (rssEvery > 0 && count % rssEvery === 0) rss.push([count, process.memoryUsage.rss() / 1024]);
  if (milestones.has(count)) send({ type: "milestone", count, t: now() });
}

/** The handler's work: none, or in the pressure variant PRESSURE_JOB_MS of waiting after the start is counted. */
const onJob = variant === "pressure" ? (payload: Payload) => (countJob(payload), sleep(PRESSURE_JOB_MS)) : countJob;

process.on("message", (message: ToChild) => {
  void handle(message).catch((error: unknown) => {
    send({ type: "error", message: error instanceof Error ? (error.stack ?? error.message) : String(error) });
  });
});
process.on("disconnect", () => process.exit(1)); // the bench process is gone

const { startWorker } = await loadSystem(systemName);
send({ type: "loaded" });

async function handle(message: ToChild): Promise<void> {
  switch (message.type) {
    case "clock":
      send({ type: "clock", id: message.id, t: now() });
      return;
    case "start":
      milestones = new Set(message.milestones);
      starts = message.recordStarts ? [] : null;
      rssEvery = message.rssEvery;
      cpuAtStart = process.resourceUsage().userCPUTime + process.resourceUsage().systemCPUTime;
      worker = await startWorker(target, variant, onJob);
      send({ type: "started", t: now() });
      return;
    case "progress":
      send({ type: "progress", count, t: now() });
      return;
    case "stop":
      await worker?.stop();
      const usage = process.resourceUsage();
      const cpuMs = (usage.userCPUTime + usage.systemCPUTime - (cpuAtStart ?? 0)) / 1000;
      // Disconnect once the report is written: a large one (thousands of
      // start times) is still being written when send returns, and the
      // disconnect, or the exit below, would end this process before it is.
      process.send!({ type: "stopped", count, maxRssKb: peakRssKb(), cpuMs, starts: starts ?? [], rss } satisfies FromChild, undefined, {}, () => {
        process.disconnect?.();
        // Leave even if a library left a timer behind.
        setTimeout(() => process.exit(0), 200).unref();
      });
      return;
  }
}
