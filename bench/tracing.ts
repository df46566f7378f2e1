/**
 * `node bench/dist/tracing.js [--jobs 20000] [--runs 3]` (built by `npm run bench`, or `tsc -p bench`)
 *
 * What tracing costs a worker that has no tracer provider: the same no-op
 * jobs processed with `tracing: false` and with tracing on while
 * `@opentelemetry/api` is installed but no provider is registered (each
 * attempt then only checks for one: docs/tracing.md). Runs alternate between
 * the two on fresh databases, in this one process; the table gives the
 * median jobs/s and worker CPU per job of each, and their ratio. First, the
 * check itself: the time of 10 million calls of the per-attempt span hook
 * with no provider, and how many garbage collections ran during them (none
 * means it allocated nothing).
 */
import { PerformanceObserver } from "node:perf_hooks";
import { parseArgs } from "node:util";
import { type AnyJobDefinition, Conveyor, defineJob } from "conveyor-jobs";
import pino from "pino";
import { z } from "zod";
import { now, sleep } from "./lib/clock.js";
import { createDatabase } from "./lib/postgres.js";
import { median } from "./lib/stats.js";

const { values: args } = parseArgs({ options: { jobs: { type: "string", default: "20000" }, runs: { type: "string", default: "3" } } });
const JOBS = Number.parseInt(args.jobs!, 10);
const RUNS = Number.parseInt(args.runs!, 10);

type Mode = "tracing off" | "on, no provider";
const MODES: Mode[] = ["tracing off", "on, no provider"];

const job = defineJob({ kind: "bench.noop", schema: z.object({ n: z.number() }), handler: () => {} }) as unknown as AnyJobDefinition;

/** One run: JOBS waiting jobs processed by one worker (the main bench's settings); jobs/s and CPU µs per job. */
async function run(mode: Mode): Promise<{ rate: number; cpuPerJobUs: number }> {
  const db = await createDatabase("conveyor_tracing");
  const conveyor = new Conveyor({ connectionString: db.url, jobs: [job], logger: pino({ level: "warn" }), tracing: mode === "tracing off" ? false : {} });
  try {
    await conveyor.migrate();
    await conveyor.enqueueMany(Array.from({ length: JOBS }, (_, n) => ({ job, payload: { n } })));
    await conveyor.pool.query("ANALYZE conveyor.jobs");
    const worker = conveyor.worker({ concurrency: 800, claimBatchSize: 200 });
    const cpu = process.cpuUsage();
    const started = now();
    await worker.start();
    for (;;) {
      const { rows } = await conveyor.pool.query("SELECT count(*)::int AS n FROM conveyor.jobs WHERE status <> 'succeeded'");
      if (rows[0].n === 0) break;
      await sleep(20);
    }
    const seconds = (now() - started) / 1000;
    const used = process.cpuUsage(cpu);
    await worker.stop();
    return { rate: JOBS / seconds, cpuPerJobUs: (used.user + used.system) / JOBS };
  } finally {
    await conveyor.close();
    await db.drop();
  }
}

/** The per-attempt hook of src/tracing (not exported by the package), on a job as a claim returns it. */
interface TracingModule {
  loadTracingApi(): Promise<void>;
  Tracing: new (enabled: boolean, attempts: "link" | "child") => { attemptSpan(job: object, workerId: string): unknown };
}

async function checkCost(): Promise<void> {
  const tracing = (await import(new URL("../../packages/core/dist/src/tracing/tracing.js", import.meta.url).href)) as TracingModule;
  await tracing.loadTracingApi();
  const claimed = { id: "j", tenant: "default", kind: "k", queue: "q", payload: {}, attempts: 1, maxAttempts: 3, executionId: "e", idempotencyKey: null, waitedMs: 0 };
  let collections = 0;
  const observer = new PerformanceObserver((list) => (collections += list.getEntries().length));
  observer.observe({ entryTypes: ["gc"] });
  const CALLS = 10_000_000;
  for (const enabled of [false, true]) {
    const hook = new tracing.Tracing(enabled, "link");
    for (let i = 0; i < 1_000_000; i++) hook.attemptSpan(claimed, "w"); // warm up
    await sleep(50);
    collections = 0;
    const started = now();
    let spans = 0;
    for (let i = 0; i < CALLS; i++) if (hook.attemptSpan(claimed, "w") !== undefined) spans++;
    const ns = ((now() - started) * 1e6) / CALLS;
    await sleep(50); // let the observer report
    console.log(`attemptSpan(), tracing ${enabled ? "on, no provider" : "off"}: ${ns.toFixed(1)} ns per call, ${collections} GCs in ${CALLS / 1e6}M calls, ${spans} spans`);
  }
  observer.disconnect();
}

await checkCost();

const results = new Map<Mode, Array<{ rate: number; cpuPerJobUs: number }>>(MODES.map((mode) => [mode, []]));
for (let i = 0; i < RUNS; i++) {
  for (const mode of i % 2 === 0 ? MODES : [...MODES].reverse()) {
    const result = await run(mode);
    results.get(mode)!.push(result);
    process.stderr.write(`${mode}: ${Math.round(result.rate)} jobs/s, ${result.cpuPerJobUs.toFixed(1)} µs CPU/job\n`);
  }
}
const summary = MODES.map((mode) => {
  const runs = results.get(mode)!;
  return { mode, rate: median(runs.map((r) => r.rate)), cpu: median(runs.map((r) => r.cpuPerJobUs)) };
});
console.log(`| ${JOBS} no-op jobs, median of ${RUNS} | jobs/s | CPU µs/job |`);
console.log("|:--|--:|--:|");
for (const { mode, rate, cpu } of summary) console.log(`| ${mode} | ${Math.round(rate).toLocaleString("en")} | ${cpu.toFixed(1)} |`);
console.log(`| ratio (on / off) | ${(summary[1]!.rate / summary[0]!.rate).toFixed(3)} | ${(summary[1]!.cpu / summary[0]!.cpu).toFixed(3)} |`);
