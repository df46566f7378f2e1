/**
 * Where a system's time goes (Conveyor unless `--system` names a peer), for one workload:
 *
 *   node bench/dist/profile.js process --waiting 50000 [--variant batch] [--skip-analyze] [--cpu-prof]
 *   node bench/dist/profile.js enqueue-single --seconds 5
 *   node bench/dist/profile.js enqueue-batch --jobs 100000 --batch 1000
 *
 * Runs against DATABASE_URL (else the machine's PostgreSQL) on a fresh
 * database. When the server has pg_stat_statements in
 * shared_preload_libraries, prints every statement's calls, total and mean
 * time (nested statements too: triggers, NOTIFY). `--cpu-prof` records a CPU
 * profile of the worker process (`process`) or of this process (the enqueue
 * workloads, run with `node --cpu-prof`) and prints self time by package and
 * by function. `--variant batch` runs the system's batch handler
 * (workloads/batch.ts) in place of per-job handlers. After filling, the database is ANALYZEd as in the bench;
 * `--skip-analyze` leaves the planner without statistics (a fresh table).
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import pg from "pg";
import { now, sleep } from "./lib/clock.js";
import { newestProfile, summarizeProfile } from "./lib/cpuprofile.js";
import { WorkerProcess } from "./lib/worker-process.js";
import { loadSystem } from "./systems/index.js";
import { SYSTEM_NAMES, type SystemInstance, type SystemName } from "./systems/system.js";
import { fill } from "./workloads/enqueue.js";

const { values: args, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    waiting: { type: "string", default: "50000" },
    jobs: { type: "string" },
    batch: { type: "string", default: "1000" },
    seconds: { type: "string", default: "5" },
    "skip-analyze": { type: "boolean", default: false },
    "cpu-prof": { type: "boolean", default: false },
    top: { type: "string", default: "15" },
    system: { type: "string", default: "conveyor" },
    variant: { type: "string", default: "perJob" },
  },
});
if (!SYSTEM_NAMES.includes(args.system as SystemName)) throw new Error(`--system: one of ${SYSTEM_NAMES.join(", ")}`);
if (args.variant !== "perJob" && args.variant !== "batch" && args.variant !== "notKept") throw new Error("--variant: perJob, notKept or batch");
const variant = args.variant as "perJob" | "notKept" | "batch";
const { system } = await loadSystem(args.system as SystemName);
const workload = positionals[0] ?? "process";

const instance = await system.open("profile");
const stats = new pg.Client({ connectionString: instance.target });
await stats.connect();
const statementsAvailable = await stats
  .query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
  .then(() => stats.query("SELECT pg_stat_statements_reset()"))
  .then(() => true)
  .catch((error: Error) => {
    console.log(`(pg_stat_statements unavailable: ${error.message})`);
    return false;
  });

try {
  if (workload === "process") await profileProcess(instance);
  else if (workload === "enqueue-single") await profileEnqueueSingle(instance);
  else if (workload === "enqueue-batch") await profileEnqueueBatch(instance);
  else throw new Error(`unknown workload ${workload} (process, enqueue-single, enqueue-batch)`);
  if (statementsAvailable) console.log(`\n${await statementReport()}`);
  console.log(`\n${await tableReport()}`);
} finally {
  await stats.end();
  await instance.close();
}
process.exit(0);

async function resetStatements(): Promise<void> {
  if (statementsAvailable) await stats.query("SELECT pg_stat_statements_reset()");
}

async function profileProcess(target: SystemInstance): Promise<void> {
  const waiting = Number(args.waiting);
  const jobs = Math.min(waiting, Number(args.jobs ?? waiting));
  const enqueue = variant === "batch" && target.enqueueBatchJobs ? target.enqueueBatchJobs.bind(target) : target.enqueueMany.bind(target);
  const fillRate = await fill(enqueue, waiting, 10_000);
  console.log(`filled ${waiting} jobs at ${Math.round(fillRate)}/s`);
  if (!args["skip-analyze"]) await target.settle();
  await resetStatements();
  const profDir = mkdtempSync(join(tmpdir(), "conveyor-prof-"));
  const flags = args["cpu-prof"] ? ["--cpu-prof", `--cpu-prof-dir=${profDir}`] : [];
  const worker = await WorkerProcess.spawn(system.name, variant, target.target, flags);
  const started = now();
  await worker.start({ milestones: [1, jobs] });
  await worker.milestone(jobs, 600_000);
  while (jobs === waiting && (await target.unfinished()) > 0) await sleep(5);
  const elapsed = now() - started;
  const firstJob = await worker.milestone(1, 1_000);
  const { peakRssMb, cpuMs, count } = await worker.stop();
  console.log(
    `processed ${jobs} of ${waiting} waiting in ${(elapsed / 1000).toFixed(2)} s: ${Math.round((jobs * 1000) / elapsed)} jobs/s ` +
      `(${Math.round((jobs * 1000) / (elapsed - (firstJob - started)))} from the first job; first job after ${Math.round(firstJob - started)} ms); peak RSS ${peakRssMb.toFixed(0)} MB; worker CPU ${Math.round((cpuMs * 1000) / count)} µs per job`,
  );
  if (args["cpu-prof"]) {
    const file = newestProfile(profDir);
    console.log(file ? `\n${summarizeProfile(file, Number(args.top))}` : "(no CPU profile written)");
  }
}

async function profileEnqueueSingle(target: SystemInstance): Promise<void> {
  for (let n = 0; n < 50; n++) await target.enqueueOne({ n });
  await resetStatements();
  const started = now();
  let count = 0;
  while (now() - started < Number(args.seconds) * 1000) await target.enqueueOne({ n: count++ });
  console.log(`enqueued ${count} one at a time: ${Math.round((count * 1000) / (now() - started))} jobs/s`);
}

async function profileEnqueueBatch(target: SystemInstance): Promise<void> {
  const jobs = Number(args.jobs ?? 100_000);
  await target.enqueueMany([{ n: -1 }]);
  await resetStatements();
  const rate = await fill((p) => target.enqueueMany(p), jobs, Number(args.batch));
  console.log(`enqueued ${jobs} in batches of ${args.batch}: ${Math.round(rate)} jobs/s`);
}

/** Row writes per table: how many updates were HOT (no index entries written) and how big tables and indexes grew. */
async function tableReport(): Promise<string> {
  await sleep(600); // table statistics reach the cumulative stats system at the end of each transaction, within PGSTAT_MIN_INTERVAL
  const { rows } = await stats.query(
    `SELECT schemaname || '.' || relname AS name, n_tup_ins AS ins, n_tup_upd AS upd, n_tup_hot_upd AS hot, n_tup_del AS del,
            pg_size_pretty(pg_table_size(relid)) AS heap, pg_size_pretty(pg_indexes_size(relid)) AS indexes,
            (SELECT count(*) FROM pg_index WHERE indrelid = relid) AS index_count
       FROM pg_stat_user_tables
      WHERE n_tup_ins + n_tup_upd + n_tup_del > 0
      ORDER BY n_tup_ins + n_tup_upd + n_tup_del DESC`,
  );
  const lines = ["Row writes per table (HOT: updates that wrote no index entry):", ""];
  lines.push("  inserts  updates      HOT  deletes    heap  indexes (n)  table");
  for (const r of rows) {
    lines.push(
      `${String(r.ins).padStart(9)} ${String(r.upd).padStart(8)} ${String(r.hot).padStart(8)} ${String(r.del).padStart(8)} ${String(r.heap).padStart(7)} ${String(r.indexes).padStart(8)} (${r.index_count})  ${r.name}`,
    );
  }
  return lines.join("\n");
}

async function statementReport(): Promise<string> {
  const { rows } = await stats.query(
    `SELECT calls, total_exec_time AS total, mean_exec_time AS mean, max_exec_time AS max, rows,
            shared_blks_hit + shared_blks_read AS blocks, temp_blks_written AS temp, wal_bytes,
            regexp_replace(left(query, 110), '\\s+', ' ', 'g') AS query
       FROM pg_stat_statements
      WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
        AND query NOT ILIKE '%pg_stat_statements%'
      ORDER BY total_exec_time DESC
      LIMIT $1`,
    [Number(args.top)],
  );
  const lines = ["Statements by total server time (pg_stat_statements; nested statements included):", ""];
  lines.push("   calls   total ms  mean ms   max ms      rows/call  temp blks  WAL kB/call  statement");
  for (const r of rows) {
    lines.push(
      `${String(r.calls).padStart(8)} ${Number(r.total).toFixed(0).padStart(10)} ${Number(r.mean).toFixed(3).padStart(8)} ${Number(r.max).toFixed(1).padStart(8)} ` +
        `${(Number(r.rows) / Number(r.calls)).toFixed(1).padStart(14)} ${String(r.temp).padStart(10)} ${(Number(r.wal_bytes) / Number(r.calls) / 1024).toFixed(1).padStart(12)}  ${r.query}`,
    );
  }
  return lines.join("\n");
}
