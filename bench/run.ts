/**
 * `npm run bench [-- --quick] [--json <file>] [--runs N] [--systems a,b] [--workloads a,b] [--svg <file>]`
 *
 * Conveyor against graphile-worker, pg-boss and BullMQ on this machine: every
 * PostgreSQL system on the same server (DATABASE_URL, else the machine's),
 * each run on a fresh database; BullMQ on the Redis at 127.0.0.1:6379 when
 * one answers (`bullmq`), and on a Redis with AOF fsynced every second that
 * the bench starts itself when redis-server is installed (`bullmq-aof`);
 * BullMQ on its PostgreSQL backend (`bullmq-pg`) on a PostgreSQL the bench
 * starts itself (lib/private-postgres.ts).
 * The durable-execution workloads (Conveyor against DBOS) run on a
 * PostgreSQL the bench starts for them (workloads/durable.ts), and so do the
 * batch handlers (workloads/batch.ts), for the server time per job, and
 * the pressure workload (workloads/pressure.ts), for autovacuum.
 * Progress goes to stderr; the table goes to stdout.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { now } from "./lib/clock.js";
import { type BenchConfig, configFor, WORKLOAD_NAMES, type WorkloadName } from "./lib/config.js";
import { dropLeftoverDatabases, measureInsertLimit, serverInfo, SERVER_URL } from "./lib/postgres.js";
import { sharedPrivatePostgres, stopPrivatePostgres } from "./lib/private-postgres.js";
import { REDIS_PORT, redisPersistence } from "./lib/redis.js";
import { stopRedisServers } from "./lib/redis-server.js";
import { figure, type MetricKey, pressureTable, ratio, type Report, svgChart, table, targetsText, toJson } from "./report.js";
import { loadSystem } from "./systems/index.js";
import { type BenchSystem, PRESSURE_CONCURRENCY, PRESSURE_JOB_MS, SYSTEM_NAMES, type SystemName } from "./systems/system.js";
import { enqueueBatch, enqueueOneAtATime } from "./workloads/enqueue.js";
import { dashboardBench, type DashboardBenchResult } from "./workloads/dashboard.js";
import { batchRun } from "./workloads/batch.js";
import { type DurableServer, durableServer, durableSteps, RESUME_STEPS, resumeAfterKill, sleepingClaim } from "./workloads/durable.js";
import { keyLimitBench, type KeyLimitBenchResult } from "./workloads/key-limits.js";
import { batchKeysBench, type BatchKeysCase, type BatchKeysResult } from "./workloads/batch-keys.js";
import { memoryRun } from "./workloads/memory.js";
import { type PressureResult, pressureRun } from "./workloads/pressure.js";
import { latency, processAll, scaleFinished, scaleLarge, scaleSmall } from "./workloads/process.js";
import { chainGraph, fanInGraph, layeredGraph, runWorkflow } from "./workloads/workflows.js";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

const { values: args } = parseArgs({
  options: {
    quick: { type: "boolean", default: false },
    json: { type: "string" },
    svg: { type: "string" },
    runs: { type: "string" },
    systems: { type: "string" },
    workloads: { type: "string" },
    large: { type: "string" },
    "key-jobs": { type: "string" },
    "dashboard-jobs": { type: "string" },
    "durable-jobs": { type: "string" },
    sleeping: { type: "string" },
    "batch-jobs": { type: "string" },
    "pressure-rate": { type: "string" },
    "pressure-phase-s": { type: "string" },
    "pressure-drain-s": { type: "string" },
    "pressure-reader-pause-ms": { type: "string" },
  },
});

function listOption<T extends string>(value: string | undefined, allowed: readonly T[], name: string): T[] {
  if (!value) return [...allowed];
  const items = value.split(",").map((item) => item.trim()) as T[];
  for (const item of items) if (!allowed.includes(item)) throw new Error(`--${name}: unknown "${item}" (one of ${allowed.join(", ")})`);
  return items;
}

const config: BenchConfig = {
  ...configFor(args.quick!),
  systems: listOption(args.systems, SYSTEM_NAMES, "systems"),
  workloads: listOption(args.workloads, WORKLOAD_NAMES, "workloads"),
};
if (args.runs) config.runs = Math.max(1, Number.parseInt(args.runs, 10));
if (args.large) config.scaleLarge = Math.max(0, Number.parseInt(args.large, 10));
if (args["dashboard-jobs"]) config.dashboardJobs = Math.max(10_000, Number.parseInt(args["dashboard-jobs"], 10));
if (args["key-jobs"]) config.keyLimitJobs = Math.max(1_000, Number.parseInt(args["key-jobs"], 10));
if (args["durable-jobs"]) {
  config.durableJobs = Math.max(10, Number.parseInt(args["durable-jobs"], 10));
  config.durableResumeJobs = Math.max(10, Math.round(config.durableJobs / 2));
}
if (args["batch-jobs"]) config.batchJobs = Math.max(100, Number.parseInt(args["batch-jobs"], 10));
if (args["pressure-rate"]) config.pressureRate = Math.max(1, Number(args["pressure-rate"]));
if (args["pressure-phase-s"]) config.pressurePhaseMs = Math.max(1, Number(args["pressure-phase-s"])) * 1000;
if (args["pressure-drain-s"]) config.pressureDrainMs = Math.max(1, Number(args["pressure-drain-s"])) * 1000;
if (args["pressure-reader-pause-ms"]) config.pressureReaderPauseMs = Math.max(0, Number(args["pressure-reader-pause-ms"]));
if (args.sleeping) config.sleepingJobs = Math.max(1_000, Number.parseInt(args.sleeping, 10));

const log = (message: string) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${message}\n`);
const benchStarted = now();

function versionOf(pkg: string): string {
  try {
    return JSON.parse(readFileSync(resolve(ROOT, "bench", "node_modules", pkg, "package.json"), "utf8")).version;
  } catch {
    return "?";
  }
}

/** The commit the measured Conveyor was built from, and whether packages/ had uncommitted changes. */
function conveyorRevision(): string {
  try {
    const head = execFileSync("git", ["rev-parse", "--short", "HEAD"], { cwd: ROOT, encoding: "utf8" }).trim();
    const dirty = execFileSync("git", ["status", "--porcelain", "--", "packages"], { cwd: ROOT, encoding: "utf8" }).trim() !== "";
    return dirty ? `${head} with uncommitted changes in packages/` : head;
  } catch {
    return "unknown";
  }
}

const dropped = await dropLeftoverDatabases();
if (dropped.length > 0) log(`dropped ${dropped.length} database(s) left by an earlier run`);

const server = await serverInfo();
const loadAtStart = loadavg();
const report: Report = {
  meta: {
    date: new Date().toISOString(),
    mode: config.quick ? "quick" : "full",
    runs: config.runs,
    machine: `${cpus().length} × ${cpus()[0]?.model.trim() ?? "cpu"}`,
    node: process.version,
    postgres: { server: SERVER_URL.replace(/\/\/[^@]*@/, "//"), ...server },
    redis: await redisPersistence(REDIS_PORT),
    /** The Redis the bench started for bullmq-aof, as it reports itself; null when it did not run. */
    redisAof: null,
    versions: {
      conveyor: conveyorRevision(),
      "graphile-worker": versionOf("graphile-worker"),
      "pg-boss": versionOf("pg-boss"),
      bullmq: versionOf("bullmq"),
      dbos: versionOf("@dbos-inc/dbos-sdk"),
    },
    loadAverageAtStart: loadAtStart.map((l) => Math.round(l * 100) / 100),
    config: { ...config },
  },
  postgres: { pgbench: null, nodePg: null },
  systems: {},
};

const systems: BenchSystem[] = [];
for (const name of config.systems) {
  const { system } = await loadSystem(name);
  const skipped = await system.unavailable();
  report.systems[name] = { settings: system.settings, skipped, runs: {}, notes: {} };
  if (skipped) log(`${name}: skipped (${skipped})`);
  else systems.push(system);
}
/** The systems of the job-queue workloads: all but those measured in the durable workloads only (DBOS). */
const jobSystems = systems.filter((system) => !system.durableOnly);
if (systems.some((system) => system.name === "bullmq-aof")) {
  // It passed unavailable(), so its Redis is running and the port a number.
  const { aofRedisPort } = await import("./systems/bullmq-aof.js");
  report.meta.redisAof = await redisPersistence((await aofRedisPort()) as number);
}

function record(name: SystemName, metric: MetricKey, run: number, value: number, note?: string): void {
  const entry = report.systems[name]!;
  const runs = (entry.runs[metric] ??= Array.from({ length: config.runs }, () => NaN));
  runs[run] = value;
  if (note && !entry.notes[metric]?.split("; ").includes(note)) entry.notes[metric] = entry.notes[metric] ? `${entry.notes[metric]}; ${note}` : note;
}

/** Run one measurement; a failure is recorded (NaN and a note) and the bench goes on. */
async function measure(name: SystemName, what: string, run: number, metric: MetricKey, action: () => Promise<void>): Promise<void> {
  const started = now();
  try {
    await action();
    log(`  ${name} ${what}: done in ${((now() - started) / 1000).toFixed(1)} s`);
  } catch (error) {
    record(name, metric, run, NaN, `run ${run + 1} failed: ${(error as Error).message.split("\n")[0]}`);
    log(`  ${name} ${what}: FAILED ${(error as Error).stack ?? error}`);
  }
}

const has = (workload: WorkloadName) => config.workloads.includes(workload);
/** The workflows workload's graphs, each with its three figures. */
const workflows = [
  { graph: fanInGraph(config.workflowFanIn), metrics: ["workflowFanInS", "workflowFanInUsPerEdge", "workflowFanInServerUsPerEdge"] },
  { graph: chainGraph(config.workflowChain), metrics: ["workflowChainS", "workflowChainUsPerEdge", "workflowChainServerUsPerEdge"] },
  {
    graph: layeredGraph(config.workflowLayers, config.workflowWidth, config.workflowLayerDependencies),
    metrics: ["workflowLayeredS", "workflowLayeredUsPerEdge", "workflowLayeredServerUsPerEdge"],
  },
] as const;
const insertRuns: number[] = [];
const insertNodeRuns: number[] = [];
const fmtRate = (v: number) => `${Math.round(v).toLocaleString("en-US")}/s`;

const loadByRun: number[][] = [];
report.meta.loadAverageByRun = loadByRun;
for (let run = 0; run < config.runs; run++) {
  loadByRun.push(loadavg().map((l) => Math.round(l * 100) / 100));
  log(`run ${run + 1} of ${config.runs} (${config.quick ? "quick" : "full"}), load average ${loadavg().map((l) => l.toFixed(2)).join(" ")}`);
  const tag = `r${run + 1}`;
  if (has("insert-limit")) {
    const limit = await measureInsertLimit(config.insertLimitSeconds);
    if (limit.pgbench !== null) insertRuns.push(limit.pgbench);
    insertNodeRuns.push(limit.nodePg);
    log(`  single-INSERT limit: pgbench ${limit.pgbench === null ? "n/a" : fmtRate(limit.pgbench)}, node-pg loop ${fmtRate(limit.nodePg)}`);
  }
  for (const system of jobSystems) {
    const name = system.name;
    if (has("enqueue-single")) {
      await measure(name, "enqueue one at a time", run, "enqueueSingle", async () => {
        record(name, "enqueueSingle", run, await enqueueOneAtATime(system, config, `${tag}es`, 1));
      });
      await measure(name, `enqueue one at a time from ${config.concurrentCallers} callers`, run, "enqueueConcurrent", async () => {
        record(name, "enqueueConcurrent", run, await enqueueOneAtATime(system, config, `${tag}ec`, config.concurrentCallers));
      });
    }
    if (has("enqueue-batch")) {
      await measure(name, `enqueue ${config.enqueueBatchTotal} in batches of ${config.batchSize}`, run, "enqueueBatch", async () => {
        record(name, "enqueueBatch", run, await enqueueBatch(system, config, `${tag}eb`, false));
      });
      await measure(name, `enqueue ${config.enqueueBatchTotal} in one call`, run, "enqueueBatchSingleCall", async () => {
        record(name, "enqueueBatchSingleCall", run, await enqueueBatch(system, config, `${tag}e1`, true));
      });
    }
  }
  for (const system of jobSystems) {
    const name = system.name;
    if (has("process")) {
      await measure(name, `process ${config.processJobs}`, run, "process", async () => {
        const result = await processAll(system, "perJob", config, `${tag}p`);
        const note = result.capped ? `capped at ${config.processCapMs / 1000} s` : undefined;
        record(name, "process", run, result.rate, note);
        record(name, "processFromFirstJob", run, result.rateFromFirstJob, note);
        record(name, "peakRssMb", run, result.peakRssMb);
        record(name, "workerCpuUsPerJob", run, result.cpuUsPerJob);
      });
      if (name === "conveyor") {
        // Beside graphile-worker's process figure: both then delete each job as it succeeds.
        await measure(name, `process ${config.processJobs} (succeeded jobs not kept)`, run, "processNotKept", async () => {
          const result = await processAll(system, "notKept", config, `${tag}pn`);
          record(name, "processNotKept", run, result.rate, result.capped ? `capped at ${config.processCapMs / 1000} s` : undefined);
        });
      }
      if (name === "pg-boss") {
        await measure(name, `process ${config.processJobs} (array handler)`, run, "processArrayHandler", async () => {
          const result = await processAll(system, "array", config, `${tag}pa`);
          record(name, "processArrayHandler", run, result.rate, result.capped ? `capped at ${config.processCapMs / 1000} s` : undefined);
        });
      }
    }
    if (has("latency")) {
      await measure(name, `latency of ${config.latencyJobs} jobs`, run, "latencyP50Ms", async () => {
        const result = await latency(system, config, `${tag}l`);
        const note = result.received < config.latencyJobs ? `only ${result.received} of ${config.latencyJobs} jobs started in time` : undefined;
        record(name, "latencyP50Ms", run, result.p50, note);
        record(name, "latencyP95Ms", run, result.p95);
        record(name, "latencyP99Ms", run, result.p99);
      });
    }
    if (has("workflows")) {
      for (const { graph, metrics: [seconds, usPerEdge, serverUsPerEdge] } of workflows) {
        const what = `workflow ${graph.shape}: ${graph.dependsOn.length} jobs, ${graph.edges} dependencies`;
        await measure(name, what, run, seconds, async () => {
          const result = await runWorkflow(system, graph, config, `${tag}w${graph.shape.slice(0, 2)}`);
          if (typeof result === "string") {
            record(name, seconds, run, NaN, result);
            return;
          }
          const note = result.capped ? `capped at ${config.workflowCapMs / 1000} s, ${result.finished} of ${graph.dependsOn.length} jobs done` : undefined;
          record(name, seconds, run, result.seconds, note);
          record(name, usPerEdge, run, result.usPerEdge, note);
          if (result.serverUsPerEdge !== null) record(name, serverUsPerEdge, run, result.serverUsPerEdge);
          log(`  ${name} ${graph.shape}: enqueued in ${result.enqueueSeconds.toFixed(2)} s, last done at ${result.seconds.toFixed(2)} s${note ? ` (${note})` : ""}`);
        });
      }
    }
    if (has("scale")) {
      await measure(name, `process with ${config.scaleSmall} waiting`, run, "processAt10k", async () => {
        const result = await scaleSmall(system, config, `${tag}s`);
        record(name, "processAt10k", run, result.rate, result.capped ? `capped at ${config.scaleCapMs / 1000} s` : undefined);
      });
    }
  }
}

if (has("scale") && config.scaleLarge > 0) {
  const metric: MetricKey = config.scaleLarge >= 1_000_000 ? "processAt1M" : "processAt100k";
  report.meta.loadAverageAtScale = loadavg().map((l) => Math.round(l * 100) / 100);
  log(`scale: ${config.scaleLarge.toLocaleString("en-US")} jobs waiting, ${config.runs} worker runs each, load average ${loadavg().map((l) => l.toFixed(2)).join(" ")}`);
  for (const system of jobSystems) {
    const name = system.name;
    await measure(name, `process with ${config.scaleLarge} waiting`, 0, metric, async () => {
      const results = await scaleLarge(system, config, "big", (rate) => {
        record(name, "fillAtLarge", 0, rate);
        log(`  ${name} filled ${config.scaleLarge.toLocaleString("en-US")} at ${fmtRate(rate)}`);
      });
      results.forEach((result, run) => {
        if (result instanceof Error) record(name, metric, run, NaN, `run ${run + 1} failed: ${result.message}`);
        else record(name, metric, run, result.rate, result.capped ? `capped at ${config.scaleCapMs / 1000} s` : undefined);
      });
    });
  }
}

if (has("scale") && config.finishedKept > 0) {
  const metric: MetricKey = config.finishedKept >= 1_000_000 ? "processAt1MFinished" : "processAt50kFinished";
  log(`scale: ${config.scaleSmall.toLocaleString("en-US")} waiting beside ${config.finishedKept.toLocaleString("en-US")} finished jobs kept, ${config.runs} worker runs each`);
  for (const system of jobSystems.filter((s) => s.fillsFinished)) {
    const name = system.name;
    await measure(name, `process with ${config.finishedKept} finished kept`, 0, metric, async () => {
      const results = await scaleFinished(system, config, "fin");
      results.forEach((result, run) => {
        if (result instanceof Error) record(name, metric, run, NaN, `run ${run + 1} failed: ${result.message}`);
        else record(name, metric, run, result.rate, result.capped ? `capped at ${config.scaleCapMs / 1000} s` : undefined);
      });
    });
  }
}

/**
 * The PostgreSQL the bench starts for the workloads that read server
 * statistics (batch, durable), so that the WAL written and
 * pg_stat_statements are their runs' alone; else the bench server. Started
 * on first use, stopped by stopPrivatePostgres().
 */
let statsServer: DurableServer | null = null;
async function privateServer(): Promise<DurableServer> {
  if (statsServer === null) {
    const started = await sharedPrivatePostgres();
    statsServer =
      typeof started === "string"
        ? await durableServer(SERVER_URL, false, `the bench server, as no PostgreSQL could be started for these workloads (${started})`)
        : await durableServer(started.url, true, started.description, started.pid);
  }
  return statsServer;
}
const serverTimeSource = (server: DurableServer) =>
  server.statements ? "pg_stat_statements total_exec_time of the store's database" : "pg_stat_database active_time of the store's database";
const durableSystems = systems.filter((system) => system.name === "conveyor" || system.durableOnly);
const runsDurable = (has("durable") || has("durable-sleeping")) && durableSystems.length > 0;

// Batch handlers (workloads/batch.ts): the same no-op jobs through each
// system's batch handler, and through Conveyor's per-job handlers, on the
// server above; run by run, side by side.
const batchSystems = jobSystems.filter((system) => system.batchHandlers);
let batch: { server: DurableServer; serverTime: string } | null = null;
if (has("batch") && batchSystems.length > 0) {
  const server = await privateServer();
  batch = { server, serverTime: serverTimeSource(server) };
  log(`batch: ${config.batchJobs.toLocaleString("en-US")} jobs per run on ${server.description}`);
  report.meta.batch = { server: server.description, serverTime: batch.serverTime, jobs: config.batchJobs };
  try {
    const runs = [
      ...batchSystems.map((system) => ({
        system,
        mode: "batch" as const,
        metrics: ["batchJobsPerS", "batchServerUsPerJob", "batchServerCpuUsPerJob", "batchWorkerCpuUsPerJob"] as const,
      })),
      ...batchSystems
        .filter((system) => system.name === "conveyor")
        .map((system) => ({
          system,
          mode: "perJob" as const,
          metrics: ["batchPerJobJobsPerS", "batchPerJobServerUsPerJob", "batchPerJobServerCpuUsPerJob", "batchPerJobWorkerCpuUsPerJob"] as const,
        })),
    ];
    for (let run = 0; run < config.runs; run++) {
      log(`batch run ${run + 1} of ${config.runs}, load average ${loadavg().map((l) => l.toFixed(2)).join(" ")}`);
      for (const { system, mode, metrics: [rate, serverUs, serverCpuUs, cpuUs] } of runs) {
        const name = system.name;
        const what = `${config.batchJobs} jobs, ${mode === "batch" ? "batch handler" : "per-job handlers"}`;
        await measure(name, what, run, rate, async () => {
          const result = await batchRun(system, mode, config, `r${run + 1}${mode === "batch" ? "b" : "bp"}`, server);
          const note = result.capped ? `capped at ${config.batchCapMs / 1000} s` : undefined;
          record(name, rate, run, result.jobsPerSecond, note);
          record(name, serverUs, run, result.serverUsPerJob, note);
          if (result.serverCpuUsPerJob !== null) record(name, serverCpuUs, run, result.serverCpuUsPerJob, note);
          record(name, cpuUs, run, result.cpuUsPerJob, note);
          const serverCpu = result.serverCpuUsPerJob === null ? "" : `, server CPU ${result.serverCpuUsPerJob.toFixed(1)} µs`;
          log(
            `  ${name} ${mode === "batch" ? "batch" : "per-job"}: ${fmtRate(result.jobsPerSecond)}; per job server time ${result.serverUsPerJob.toFixed(1)} µs${serverCpu}, worker CPU ${result.cpuUsPerJob.toFixed(1)} µs${note ? ` (${note})` : ""}`,
          );
        });
      }
    }
  } finally {
    if (!runsDurable) await stopPrivatePostgres();
  }
}

// Durable execution, Conveyor against DBOS (workloads/durable.ts), on the
// server above.
let durable: { server: DurableServer; serverTime: string; wal: string } | null = null;
if (runsDurable) {
  const server = await privateServer();
  durable = {
    server,
    serverTime: serverTimeSource(server),
    wal: server.private ? "the WAL position's advance on the whole server" : server.statements ? "pg_stat_statements wal_bytes (statements only)" : "not measured",
  };
  log(`durable: on ${server.description}`);
  report.meta.durable = {
    server: server.description,
    serverTime: durable.serverTime,
    wal: durable.wal,
    jobs: config.durableJobs,
    steps: config.durableSteps,
    resumeJobs: config.durableResumeJobs,
    resumeSteps: RESUME_STEPS,
    resumeSleepMs: config.durableResumeSleepMs,
    sleepingJobs: config.sleepingJobs,
  };
  try {
    for (let run = 0; has("durable") && run < config.runs; run++) {
      log(`durable run ${run + 1} of ${config.runs}, load average ${loadavg().map((l) => l.toFixed(2)).join(" ")}`);
      for (const system of durableSystems) {
        const name = system.name;
        const what = `${config.durableJobs} jobs of ${config.durableSteps} steps, and of none`;
        await measure(name, what, run, "durableJobsPerS", async () => {
          const result = await durableSteps(system, config, `r${run + 1}d`, server);
          const note = result.note ?? undefined;
          record(name, "durableJobsPerS", run, result.jobsPerSecond, note);
          record(name, "durableJobsPerSFromFirstStep", run, result.jobsPerSecondFromFirstStep, note);
          record(name, "durableNoStepJobsPerS", run, result.noStepJobsPerSecond, note);
          record(name, "durableServerUsPerStep", run, result.serverUsPerStep, note);
          record(name, "durableServerUsPerJob", run, result.serverUsPerJob, note);
          if (result.walBytesPerStep !== null) record(name, "durableWalBytesPerStep", run, result.walBytesPerStep, note);
          if (result.walBytesPerJob !== null) record(name, "durableWalBytesPerJob", run, result.walBytesPerJob, note);
          const wal = (bytes: number | null) => (bytes === null ? "n/a" : `${Math.round(bytes)} B`);
          log(
            `  ${name}: ${fmtRate(result.jobsPerSecond)} jobs of ${config.durableSteps} steps, ${fmtRate(result.noStepJobsPerSecond)} of none; ` +
              `per step ${result.serverUsPerStep.toFixed(1)} µs server, ${wal(result.walBytesPerStep)} WAL; per job of none ${result.serverUsPerJob.toFixed(1)} µs, ${wal(result.walBytesPerJob)}`,
          );
        });
        await measure(name, `SIGKILL of a worker running ${config.durableResumeJobs} durable jobs`, run, "durableResumeS", async () => {
          const result = await resumeAfterKill(system, config, `r${run + 1}k`, server);
          record(name, "durableResumeS", run, result.seconds, result.capped ? `capped at ${config.durableCapMs / 1000} s` : undefined);
          const left = config.durableResumeJobs * RESUME_STEPS - result.stepsBeforeKill;
          log(`  ${name}: all done ${result.seconds.toFixed(2)} s after the kill; the replacement ran ${result.stepsAfterKill} steps (${left} were left at the kill milestone)`);
        });
      }
    }
    if (has("durable-sleeping")) {
      for (const system of durableSystems.filter((s) => !s.durableOnly)) {
        const name = system.name;
        log(`durable-sleeping: ${config.sleepingWaiting.toLocaleString("en-US")} waiting beside ${config.sleepingJobs.toLocaleString("en-US")} sleeping jobs, and beside none`);
        await measure(name, `process beside ${config.sleepingJobs} sleeping jobs`, 0, "sleepingJobsPerS", async () => {
          const results = await sleepingClaim(system, config, "zz", server, log);
          for (const [metric, runs] of [
            ["sleepingNoneJobsPerS", results.none],
            ["sleepingJobsPerS", results.sleeping],
          ] as const) {
            runs.forEach((result, run) => {
              if (result instanceof Error) record(name, metric, run, NaN, `run ${run + 1} failed: ${result.message}`);
              else record(name, metric, run, result.rate, result.capped ? `capped at ${config.scaleCapMs / 1000} s` : undefined);
            });
          }
        });
      }
    }
  } finally {
    await stopPrivatePostgres();
  }
}

// Worker memory over a long run, one run per system: the RSS slope after
// warm-up (workloads/memory.ts).
if (has("memory")) {
  log(`memory: ${config.memoryJobs.toLocaleString("en-US")} jobs through one worker, RSS every ${config.memorySampleEvery.toLocaleString("en-US")}`);
  for (const system of jobSystems) {
    const name = system.name;
    await measure(name, `memory over ${config.memoryJobs} jobs`, 0, "rssSlopeMbPer100k", async () => {
      const result = await memoryRun(system, config, "mem");
      const note = result.capped ? `capped at ${config.memoryCapMs / 1000} s after ${result.jobs.toLocaleString("en-US")} jobs` : undefined;
      record(name, "rssSlopeMbPer100k", 0, result.slopeMbPer100k, note);
      record(name, "rssAfterWarmUpMb", 0, result.rssAfterWarmUpMb);
      record(name, "rssAtEndMb", 0, result.rssAtEndMb, note);
      log(`  ${name}: ${result.jobs.toLocaleString("en-US")} jobs, RSS ${result.rssAfterWarmUpMb.toFixed(1)} → ${result.rssAtEndMb.toFixed(1)} MB, slope ${result.slopeMbPer100k.toFixed(2)} MB per 100k jobs`);
    });
  }
}

// Pressure (workloads/pressure.ts): a steady load through one worker per
// system while an xid is held, while readers hold snapshots, and above the
// rate, then the drain; on the PostgreSQL the bench starts (autovacuum on,
// where the machine's server may have it off), a fresh database each.
let pressure: { server: string; results: Partial<Record<SystemName, PressureResult | string>> } | null = null;
const pressureSystems = jobSystems.filter((system) => !system.redis);
if (has("pressure") && pressureSystems.length > 0) {
  const started = await sharedPrivatePostgres();
  if (typeof started === "string") log(`pressure: skipped, no PostgreSQL of the bench's own (${started})`);
  else {
    const phaseS = config.pressurePhaseMs / 1000;
    log(
      `pressure: ${config.pressureRate.toLocaleString("en-US")} jobs/s of 1 ms jobs, ${phaseS} s per phase (overload ${config.pressureOverload}×), ` +
        `drain up to ${config.pressureDrainMs / 1000} s, on ${started.description}`,
    );
    pressure = { server: started.description, results: {} };
    for (const system of pressureSystems) {
      try {
        pressure.results[system.name] = await pressureRun(
          system,
          {
            rate: config.pressureRate,
            overload: config.pressureOverload,
            phaseMs: config.pressurePhaseMs,
            drainMs: config.pressureDrainMs,
            readers: config.pressureReaders,
            readerPauseMs: config.pressureReaderPauseMs,
          },
          "pr",
          started.url,
          log,
        );
      } catch (error) {
        pressure.results[system.name] = `failed: ${(error as Error).message.split("\n")[0]}`;
        log(`  ${system.name} pressure: FAILED ${(error as Error).stack ?? error}`);
      }
    }
    report.meta.pressure = pressure;
  }
}

// Limits per key, Conveyor alone (no peer has them in the same form): the
// claim rate with a key limit that never binds against none, and the other
// keys' rate while hot keys are held at their limit (workloads/key-limits.ts).
let keyLimits: KeyLimitBenchResult | null = null;
if (has("key-limits") && config.systems.includes("conveyor")) {
  log(`key limits: ${config.keyLimitJobs.toLocaleString("en-US")} jobs waiting over ${config.keyLimitKeys.toLocaleString("en-US")} keys`);
  try {
    keyLimits = await keyLimitBench({
      jobs: config.keyLimitJobs,
      keys: config.keyLimitKeys,
      hotKeys: 5,
      phaseMs: config.keyLimitPhaseMs,
      warmupMs: 1_000,
      rounds: 3,
      concurrency: 800,
      claimBatchSize: 200,
      log,
    });
  } catch (error) {
    log(`key limits: FAILED ${(error as Error).stack ?? error}`);
  }
  report.meta.keyLimits = keyLimits;
}

// Batch sizes over keys, Conveyor alone: how full batches get under a
// backlog spread over 1 to 100 keys by `batch.key`, on a worker of 100
// slots, and on one of (keys + 1) × maxSize slots (workloads/batch-keys.ts).
let batchKeys: BatchKeysResult[] | null = null;
if (has("batch-keys") && config.systems.includes("conveyor")) {
  const cases: BatchKeysCase[] = [
    ...[1, 5, 25, 100].map((keys) => ({ keys, concurrency: 100 })),
    { keys: 25, concurrency: 26 * config.batchKeysMaxSize },
  ];
  log(
    `batch keys: ${config.batchKeysJobs.toLocaleString("en-US")} jobs per case, batches of ${config.batchKeysMaxSize}, ` +
      `maxWaitMs ${config.batchKeysMaxWaitMs}, handler calls of ${config.batchKeysCallMs} ms on average`,
  );
  try {
    batchKeys = await batchKeysBench({
      jobs: config.batchKeysJobs,
      cases,
      maxSize: config.batchKeysMaxSize,
      maxWaitMs: config.batchKeysMaxWaitMs,
      callMs: config.batchKeysCallMs,
      log,
    });
  } catch (error) {
    log(`batch keys: FAILED ${(error as Error).stack ?? error}`);
  }
  report.meta.batchKeys = batchKeys;
}

// The dashboard and bulk actions at scale, Conveyor alone: API latencies over
// a store of ten million jobs and a bulk retry beside a working worker
// (workloads/dashboard.ts).
let dashboard: DashboardBenchResult | null = null;
if (has("dashboard") && config.systems.includes("conveyor")) {
  log(`dashboard: ${config.dashboardJobs.toLocaleString("en-US")} jobs in the store`);
  try {
    dashboard = await dashboardBench({
      jobs: config.dashboardJobs,
      requests: config.dashboardRequests,
      liveJobs: config.dashboardLiveJobs,
      phaseMs: config.dashboardPhaseMs,
      log,
    });
  } catch (error) {
    log(`dashboard: FAILED ${(error as Error).stack ?? error}`);
  }
  report.meta.dashboard = dashboard;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor((values.length - 1) / 2)] ?? null;
report.postgres.pgbench = median(insertRuns);
report.postgres.nodePg = median(insertNodeRuns);
report.meta.loadAverageAtEnd = loadavg().map((l) => Math.round(l * 100) / 100);
report.meta.minutes = Math.round((now() - benchStarted) / 600) / 100;
report.meta.subtitle =
  `${config.quick ? "quick mode, 1 run" : `median of ${config.runs} runs`} · ${report.meta.machine as string} · PostgreSQL ${server.version.split(" ")[0]} (fsync ${server.fsync}) · ` +
  `Node ${process.version} · ${(report.meta.date as string).slice(0, 10)}`;

const title = systems.some((system) => system.name === "dbos") ? "Conveyor vs graphile-worker, pg-boss, BullMQ and DBOS" : "Conveyor vs graphile-worker, pg-boss and BullMQ";
process.stdout.write(`\n${title} — ${report.meta.subtitle as string}\n\n${table(report)}\n\nTargets:\n${targetsText(report)}\n\n`);
process.stdout.write(`Settings:\n${config.systems.map((name) => `  ${name}: ${Object.entries(report.systems[name]!.settings).map(([k, v]) => `${k}: ${v}`).join("; ")}`).join("\n")}\n`);
if (keyLimits !== null) {
  const pct = (ratio: number) => `${Math.round(ratio * 100)}%`;
  process.stdout.write(
    `Limits per key (Conveyor, ${config.keyLimitJobs.toLocaleString("en-US")} waiting over ${config.keyLimitKeys.toLocaleString("en-US")} keys): ` +
      `no limits ${fmtRate(keyLimits.unlimited)}; a limit that never binds ${fmtRate(keyLimits.notBinding)} (${pct(keyLimits.notBindingRatio)}, target >= 80%); ` +
      `other keys while 5 hot keys are held at 1 ${fmtRate(keyLimits.hotBinding)} (${pct(keyLimits.hotBindingRatio)} of never-binding, target >= 80%)\n`,
  );
}
if (batchKeys !== null) {
  process.stdout.write(
    `Batch sizes over keys (Conveyor, ${config.batchKeysJobs.toLocaleString("en-US")} jobs round-robin over the keys, batches of ${config.batchKeysMaxSize}, ` +
      `maxWaitMs ${config.batchKeysMaxWaitMs}, handler calls of ${config.batchKeysCallMs / 2}-${(config.batchKeysCallMs * 3) / 2} ms):\n` +
      batchKeys
        .map(
          (r) =>
            `  ${r.keys} key${r.keys === 1 ? "" : "s"}, concurrency ${r.concurrency}: average batch ${r.averageSize.toFixed(1)} jobs, ` +
            `${Math.round(r.fullShare * 100)}% of ${r.batches.toLocaleString("en-US")} batches full, ${fmtRate(r.jobsPerSecond)}`,
        )
        .join("\n") +
      "\n",
  );
}
if (dashboard !== null) {
  const p = (name: string, value: { p50: number; p95: number }, target: number) => `${name} p50 ${value.p50} ms, p95 ${value.p95} ms (target p95 < ${target} ms)`;
  const bulk = dashboard.bulkRetry;
  process.stdout.write(
    `Dashboard (Conveyor, ${dashboard.jobs.toLocaleString("en-US")} jobs, through the API): ${p("overview", dashboard.overview, 200)}; ` +
      `${p("filtered list", dashboard.filteredList, 200)}; ${p("payload search", dashboard.payloadSearch, 500)}; ${p("job page", dashboard.jobPage, 200)}\n` +
      `Bulk retry of ${bulk.jobs.toLocaleString("en-US")} dead jobs: ${bulk.seconds.toFixed(1)} s in ${bulk.phases} phases; a worker's claim rate ` +
      `${fmtRate(bulk.claimRateDuring)} beside it, ${fmtRate(bulk.claimRateAlone)} without (${Math.round(bulk.ratio * 100)}%, target >= 80%)\n`,
  );
}
if (pressure !== null) {
  process.stdout.write(
    `\nPressure, on ${pressure.server}: ${config.pressureRate.toLocaleString("en-US")} jobs/s of ${PRESSURE_JOB_MS} ms jobs offered to one worker of ${PRESSURE_CONCURRENCY} slots, ` +
      `${config.pressurePhaseMs / 1000} s per phase (overload ${config.pressureOverload}× the rate; readers: ${config.pressureReaders} REPEATABLE READ transactions ` +
      `scanning the job tables, ${config.pressureReaderPauseMs} ms apart), then a drain of at most ${config.pressureDrainMs / 1000} s:\n\n${pressureTable(pressure.results)}\n\n`,
  );
}
if (batch !== null) {
  const perRun = ratio(report, "pg-boss", "batchJobsPerS");
  process.stdout.write(
    `Batch handlers, on ${batch.server.description}: ${config.batchJobs.toLocaleString("en-US")} no-op jobs enqueued first, then one worker process, ` +
      `from its start until none is left unfinished (graphile-worker: its batch jobs, each entry counted as a job); server time per job from ${batch.serverTime}, ` +
      `the bench's polling left out${batch.server.pid === null ? "" : "; server CPU from /proc, every process of the bench's server"}. Conveyor batch / pg-boss batch: ${perRun ? `${perRun.median.toFixed(2)}× (${perRun.min.toFixed(2)}–${perRun.max.toFixed(2)})` : "not measured"}, target >= 1.5×.\n`,
  );
}
if (durable !== null) {
  const parts = [`Durable execution, on ${durable.server.description}.`];
  if (has("durable")) {
    parts.push(
      `Steps: ${config.durableJobs.toLocaleString("en-US")} jobs of ${config.durableSteps} no-op steps against as many of none; the per-step figures are the difference per step; ` +
        `server time from ${durable.serverTime}, WAL from ${durable.wal}.`,
      `SIGKILL: ${config.durableResumeJobs.toLocaleString("en-US")} jobs of ${RESUME_STEPS} steps with ${config.durableResumeSleepMs} ms sleeps between, the worker killed once half the steps ran, ` +
        `a replacement (libraries loaded) started at the kill; Conveyor with the short lease of its durable settings.`,
    );
  }
  const beside = figure(report, "conveyor", "sleepingJobsPerS");
  const alone = figure(report, "conveyor", "sleepingNoneJobsPerS");
  if (beside && alone) {
    parts.push(
      `Sleeping: ${config.sleepingWaiting.toLocaleString("en-US")} waiting beside ${config.sleepingJobs.toLocaleString("en-US")} sleeping jobs ${fmtRate(beside.median)}, ` +
        `beside none ${fmtRate(alone.median)} (${Math.round((beside.median / alone.median) * 100)}%).`,
    );
  }
  process.stdout.write(`${parts.join(" ")}\n`);
}
process.stdout.write(`Load average at start ${loadAtStart.map((l) => l.toFixed(2)).join(" ")}, at end ${loadavg().map((l) => l.toFixed(2)).join(" ")}; ${report.meta.minutes as number} min.\n`);

const svgPath = resolve(args.svg ?? resolve(ROOT, "bench/results", config.quick ? "benchmark-quick.svg" : "benchmark.svg"));
mkdirSync(dirname(svgPath), { recursive: true });
writeFileSync(svgPath, `${svgChart(report, title)}\n`);
log(`chart: ${svgPath}`);
if (args.json) {
  const jsonPath = resolve(args.json);
  mkdirSync(dirname(jsonPath), { recursive: true });
  writeFileSync(jsonPath, `${JSON.stringify(toJson(report), null, 2)}\n`);
  log(`json: ${jsonPath}`);
}
// The servers the bench started go first: process.exit leaves no time to stop them gracefully.
await stopRedisServers();
await stopPrivatePostgres();
// Libraries may leave sockets or timers behind; the bench is done.
process.exit(0);
