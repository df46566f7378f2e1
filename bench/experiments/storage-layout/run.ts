/**
 * The storage-layout experiment (README.md beside this file): the same
 * simplified job lifecycle run against each layout in sql/, on a private
 * PostgreSQL started here and removed at the end.
 *
 *   node bench/experiments/storage-layout/run.ts --phase steady --repeats 2
 *   node bench/experiments/storage-layout/run.ts --phase pinned --repeats 2
 *   node bench/experiments/storage-layout/run.ts --report results/*.jsonl
 *
 * Every run appends one JSON line to --out. --report reads such files and
 * prints the Markdown tables of docs/performance.md's "Storage layout" section (medians, and the spread min–max).
 * Runs with Node 22's type stripping (no build step); `pg` comes from the
 * workspace's node_modules.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { appendFileSync, chmodSync, chownSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { cpus, loadavg } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import pg from "pg";

const HERE = dirname(fileURLToPath(import.meta.url));

const VARIANTS = {
  A: { file: "a-one-table.sql", label: "A: one jobs table (today)", live: ["jobs"], segmented: false, history: false },
  B: { file: "b-live-history.sql", label: "B: live + history tables", live: ["jobs_live"], segmented: false, history: true },
  C: { file: "c-history-array.sql", label: "C: live + history, attempts as jsonb", live: ["jobs_live"], segmented: false, history: true },
  D: {
    file: "d-rotated-live.sql",
    label: "D: B with a rotated live table",
    live: ["jobs_live_s0", "jobs_live_s1", "jobs_live_s2", "jobs_live_s3"],
    segmented: true,
    history: true,
  },
} as const;
type Variant = keyof typeof VARIANTS;

const { values: args } = parseArgs({
  options: {
    phase: { type: "string", default: "steady" },
    variants: { type: "string", default: "A,B,C,D" },
    repeats: { type: "string", default: "2" },
    "first-repeat": { type: "string", default: "1" },
    jobs: { type: "string" },
    batch: { type: "string", default: "32" },
    backlog: { type: "string", default: "1024" },
    window: { type: "string", default: "5000" },
    "segment-jobs": { type: "string", default: "4096" },
    out: { type: "string", default: join(HERE, "results", "results.jsonl") },
    report: { type: "boolean", default: false },
    bindir: { type: "string", default: process.env.PG_BINDIR ?? "/usr/lib/postgresql/15/bin" },
  },
  allowPositionals: true,
});

const BATCH = Number(args.batch);
const BACKLOG = Number(args.backlog);
const WINDOW = Number(args.window);
const SEGMENT_JOBS = Number(args["segment-jobs"]);
const ROTATE_EVERY = 512;
const WORKER = "worker-1";

// ---------------------------------------------------------------- ids

let lastMs = 0;
let seq = 0;
/** A UUIDv7 (48-bit ms time, a 12-bit counter within the ms, random rest), as a worker makes them. */
function uuidv7(): string {
  const ms = Date.now();
  if (ms === lastMs) seq = (seq + 1) & 0xfff;
  else {
    lastMs = ms;
    seq = 0;
  }
  const t = ms.toString(16).padStart(12, "0");
  const r = randomBytes(8);
  r[0] = (r[0]! & 0x3f) | 0x80;
  const rh = r.toString("hex");
  return `${t.slice(0, 8)}-${t.slice(8)}-7${seq.toString(16).padStart(3, "0")}-${rh.slice(0, 4)}-${rh.slice(4)}`;
}

// ---------------------------------------------------------------- server

interface Server {
  url: (db: string) => string;
  child: ChildProcess;
  dir: string;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/** Settings for every variant alike. synchronous_commit off: the WAL flush per commit is the disk's, not the layout's, and would dominate a few-minute run. No checkpoint within a run (each starts after CHECKPOINT), so full-page images do not add noise to WAL bytes. */
const SETTINGS = [
  "shared_preload_libraries=pg_stat_statements",
  "pg_stat_statements.track=top",
  "listen_addresses=127.0.0.1",
  "synchronous_commit=off",
  "checkpoint_timeout=1h",
  "max_wal_size=16GB",
  "timezone=UTC",
  "jit=off",
];

async function startServer(): Promise<Server> {
  const asRoot = process.getuid?.() === 0;
  const ids = asRoot
    ? {
        uid: Number(execFileSync("id", ["-u", "postgres"], { encoding: "utf8" })),
        gid: Number(execFileSync("id", ["-g", "postgres"], { encoding: "utf8" })),
      }
    : {};
  const dir = mkdtempSync("/tmp/storage-layout-pg-");
  if ("uid" in ids) chownSync(dir, ids.uid!, ids.gid!);
  chmodSync(dir, 0o700);
  const data = join(dir, "data");
  execFileSync(join(args.bindir!, "initdb"), ["-D", data, "-U", "postgres", "--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync"], {
    ...ids,
    stdio: "pipe",
  });
  const port = await freePort();
  const child = spawn(join(args.bindir!, "postgres"), ["-D", data, "-p", String(port), "-k", dir, ...SETTINGS.flatMap((s) => ["-c", s])], {
    ...ids,
    stdio: ["ignore", "ignore", "pipe"],
  });
  let log = "";
  child.stderr!.on("data", (c: Buffer) => (log = (log + c.toString()).slice(-4000)));
  const server: Server = { url: (db) => `postgres://postgres@127.0.0.1:${port}/${db}`, child, dir };
  const stop = () => stopServer(server);
  process.once("exit", stop);
  for (const sig of ["SIGINT", "SIGTERM"] as const) process.once(sig, () => process.exit(130));
  for (let i = 0; ; i++) {
    const c = new pg.Client(server.url("postgres"));
    try {
      await c.connect();
      await c.query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
      await c.end();
      return server;
    } catch (e) {
      await c.end().catch(() => undefined);
      if (i > 300 || child.exitCode !== null) throw new Error(`postgres did not start: ${(e as Error).message}\n${log}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/** Stop our own server by its PID (SIGINT: fast shutdown), wait for it, and remove its directory. */
function stopServer(server: Server): void {
  const pid = server.child.pid;
  if (pid !== undefined && server.child.exitCode === null && server.child.signalCode === null) {
    try {
      process.kill(pid, "SIGINT");
      for (let i = 0; i < 200; i++) {
        process.kill(pid, 0);
        execFileSync("sleep", ["0.05"]);
      }
      process.kill(pid, "SIGQUIT");
    } catch {
      // gone
    }
  }
  rmSync(server.dir, { recursive: true, force: true });
}

// ---------------------------------------------------------------- SQL

function sections(variant: Variant): Record<string, string> {
  const text = readFileSync(join(HERE, "sql", VARIANTS[variant].file), "utf8");
  const out: Record<string, string> = {};
  const parts = text.split(/^-- @([a-z-]+)\n/m);
  for (let i = 1; i < parts.length; i += 2) out[parts[i]!] = parts[i + 1]!.trim();
  return out;
}

async function one<T = Record<string, unknown>>(c: pg.Client, text: string, values: unknown[] = []): Promise<T> {
  const { rows } = await c.query(text, values);
  return rows[0] as T;
}

async function walLsn(c: pg.Client): Promise<string> {
  return (await one<{ l: string }>(c, "SELECT pg_current_wal_insert_lsn()::text AS l")).l;
}
async function walSince(c: pg.Client, from: string): Promise<number> {
  return Number((await one<{ b: string }>(c, "SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), $1::pg_lsn) AS b", [from])).b);
}

interface Sizes {
  total: number;
  live: number;
  tables: Record<string, number>;
}
async function sizes(c: pg.Client, variant: Variant): Promise<Sizes> {
  const { rows } = await c.query<{ name: string; bytes: string }>(
    `SELECT c.relname AS name, pg_total_relation_size(c.oid) AS bytes FROM pg_class AS c
     JOIN pg_namespace AS n ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND c.relkind = 'r'`,
  );
  const tables: Record<string, number> = {};
  for (const r of rows) tables[r.name] = Number(r.bytes);
  const live = (VARIANTS[variant].live as readonly string[]).reduce((s, t) => s + (tables[t] ?? 0), 0);
  return { total: Object.values(tables).reduce((s, b) => s + b, 0), live, tables };
}

async function tupleStats(c: pg.Client) {
  await c.query("SELECT pg_stat_force_next_flush()");
  await c.query("SELECT 1");
  return one<{ ins: number; upd: number; hot: number; del: number; dead: number }>(
    c,
    `SELECT sum(n_tup_ins)::float8 AS ins, sum(n_tup_upd)::float8 AS upd, sum(n_tup_hot_upd)::float8 AS hot,
            sum(n_tup_del)::float8 AS del, sum(n_dead_tup)::float8 AS dead
     FROM pg_stat_user_tables`,
  );
}

/** Server time of this database's statements, by their `/* exp:name *\/` tag, from pg_stat_statements. */
async function serverTimes(c: pg.Client): Promise<Record<string, { calls: number; ms: number }>> {
  const { rows } = await c.query<{ tag: string; calls: string; ms: number }>(
    `SELECT substring(query FROM '/\\* exp:([a-z-]+) \\*/') AS tag, sum(calls) AS calls, sum(total_exec_time)::float8 AS ms
     FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
       AND query ~ '/\\* exp:' GROUP BY 1`,
  );
  const out: Record<string, { calls: number; ms: number }> = {};
  for (const r of rows) out[r.tag] = { calls: Number(r.calls), ms: r.ms };
  return out;
}

// ---------------------------------------------------------------- the lifecycle

class Lifecycle {
  inserted = 0;
  completed = 0;
  seg = 0;
  claimMs: number[] = [];
  completeMs: number[] = [];
  readonly c: pg.Client;
  readonly variant: Variant;
  readonly sql: Record<string, string>;
  constructor(c: pg.Client, variant: Variant, sql: Record<string, string>) {
    this.c = c;
    this.variant = variant;
    this.sql = sql;
  }

  get segmented(): boolean {
    return VARIANTS[this.variant].segmented;
  }

  async insert(n: number): Promise<void> {
    const ids = Array.from({ length: n }, uuidv7);
    const values: unknown[] = this.segmented ? [ids, this.seg] : [ids];
    await this.c.query({ name: "insert", text: this.sql.insert!, values });
    const before = this.inserted;
    this.inserted += n;
    if (this.segmented) {
      const next = Math.floor(this.inserted / SEGMENT_JOBS) % 4;
      if (next !== this.seg) {
        this.seg = next;
        await this.c.query({ name: "rotate", text: this.sql.rotate!, values: [this.seg, true] });
      } else if (Math.floor(this.inserted / ROTATE_EVERY) !== Math.floor(before / ROTATE_EVERY)) {
        await this.c.query({ name: "rotate", text: this.sql.rotate!, values: [this.seg, false] });
      }
    }
  }

  /** One round: insert a batch, claim a batch, complete each claimed job. */
  async round(): Promise<number> {
    await this.insert(BATCH);
    const executionIds = Array.from({ length: BATCH }, uuidv7);
    let t = performance.now();
    const { rows } = await this.c.query<{ id: string; execution_id: string; seg?: number }>({
      name: "claim",
      text: this.sql.claim!,
      values: [WORKER, BATCH, executionIds],
    });
    this.claimMs.push(performance.now() - t);
    for (const job of rows) {
      t = performance.now();
      const values: unknown[] = [job.id, job.execution_id, '{"sent":true}', WORKER];
      if (this.segmented) values.push(job.seg);
      const { rows: done } = await this.c.query<{ n: number }>({ name: "complete", text: this.sql.complete!, values });
      this.completeMs.push(performance.now() - t);
      if (done[0]?.n !== 1) throw new Error(`completion of ${job.id} matched ${done[0]?.n} rows`);
      this.completed++;
    }
    return rows.length;
  }
}

function quantile(xs: number[], q: number): number {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
}
const mean = (xs: number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;

async function freshDatabase(server: Server, name: string, variant: Variant): Promise<{ c: pg.Client; sql: Record<string, string> }> {
  const admin = new pg.Client(server.url("postgres"));
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${name}`);
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const c = new pg.Client({ connectionString: server.url(name), application_name: "storage-layout" });
  await c.connect();
  const sql = sections(variant);
  await c.query("CREATE EXTENSION pg_stat_statements");
  await c.query(sql.schema!);
  // The day-partitioned layouts share their retention function (one file for it).
  if (VARIANTS[variant].history) await c.query(readFileSync(join(HERE, "sql", "history-retention.sql"), "utf8"));
  return { c, sql };
}

async function dropDatabase(server: Server, name: string): Promise<void> {
  const admin = new pg.Client(server.url("postgres"));
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  await admin.end();
}

/** Throughput phase: N jobs with nothing holding the horizon; then retention of all of them. */
async function steady(server: Server, variant: Variant, repeat: number, jobs: number) {
  const name = `exp_${variant.toLowerCase()}_${repeat}`;
  const { c, sql } = await freshDatabase(server, name, variant);
  const life = new Lifecycle(c, variant, sql);
  await life.insert(BACKLOG);
  await c.query("CHECKPOINT");
  const before = await tupleStats(c);
  await c.query("SELECT pg_stat_statements_reset()");
  const lsn = await walLsn(c);
  const t0 = performance.now();
  while (life.completed < jobs) await life.round();
  const wallMs = performance.now() - t0;
  const wal = await walSince(c, lsn);
  const times = await serverTimes(c);
  const after = await tupleStats(c);
  const size = await sizes(c, variant);
  const n = life.completed;
  const perJob = (x: number) => x / n;
  const serverMs = Object.entries(times)
    .filter(([tag]) => ["insert", "claim", "complete", "rotate"].includes(tag))
    .reduce((s, [, v]) => s + v.ms, 0);

  // Retention: everything finished, as one job of the retention loop would.
  await c.query("CHECKPOINT");
  const rLsn = await walLsn(c);
  const r0 = performance.now();
  const cutoff = new Date(Date.now() + 86_400_000);
  let statements = 0;
  for (;;) {
    const { n: deleted } = await one<{ n: number }>(c, sql.retention!, [cutoff]);
    statements++;
    if (deleted === 0) break;
  }
  const retentionMs = performance.now() - r0;
  const retentionWal = await walSince(c, rLsn);
  let afterMs = 0;
  let afterWal = 0;
  if (sql["after-retention"]) {
    const aLsn = await walLsn(c);
    const a0 = performance.now();
    await c.query(sql["after-retention"]);
    afterMs = performance.now() - a0;
    afterWal = await walSince(c, aLsn);
  }
  const sizeAfterRetention = await sizes(c, variant);
  await c.end();
  await dropDatabase(server, name);
  return {
    phase: "steady",
    variant,
    repeat,
    jobs: n,
    batch: BATCH,
    wallMs,
    jobsPerSec: n / (wallMs / 1000),
    serverUsPerJob: (perJob(serverMs) * 1000),
    serverUsPerJobByStatement: Object.fromEntries(Object.entries(times).map(([k, v]) => [k, (v.ms * 1000) / n])),
    walBytesPerJob: perJob(wal),
    tuples: {
      insPerJob: perJob(after.ins - before.ins),
      updPerJob: perJob(after.upd - before.upd),
      hotUpdPerJob: perJob(after.hot - before.hot),
      delPerJob: perJob(after.del - before.del),
      hotRatio: after.upd - before.upd > 0 ? (after.hot - before.hot) / (after.upd - before.upd) : 0,
      deadAtEnd: after.dead,
    },
    size,
    retention: { statements, ms: retentionMs, walBytes: retentionWal, vacuumMs: afterMs, vacuumWalBytes: afterWal, sizeAfter: sizeAfterRetention.total },
  };
}

/** Held-xmin phase: a transaction with an xid stays open while N jobs go through; claim cost by jobs since the pin. */
async function pinned(server: Server, variant: Variant, repeat: number, jobs: number) {
  const name = `exp_${variant.toLowerCase()}_${repeat}_pinned`;
  const { c, sql } = await freshDatabase(server, name, variant);
  const life = new Lifecycle(c, variant, sql);
  await life.insert(BACKLOG);
  await c.query("CHECKPOINT");
  const pin = new pg.Client({ connectionString: server.url(name), application_name: "storage-layout-pin" });
  await pin.connect();
  await pin.query("BEGIN");
  await pin.query("SELECT txid_current()");
  const explain = `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${sql.claim}`;
  const windows: unknown[] = [];
  const lsn = await walLsn(c);
  const t0 = performance.now();
  let mark = 0;
  let pgssBefore = (await serverTimes(c)).claim ?? { calls: 0, ms: 0 };
  while (life.completed < jobs) {
    await life.round();
    if (life.completed - mark >= WINDOW) {
      mark = life.completed;
      // A sample of the claim's own work: run it in a transaction rolled back.
      await c.query("BEGIN");
      const { rows } = await c.query(explain, [WORKER, BATCH, Array.from({ length: BATCH }, uuidv7)]);
      await c.query("ROLLBACK");
      const plan = (rows[0] as { "QUERY PLAN": [{ Plan: Record<string, number>; "Execution Time": number }] })["QUERY PLAN"][0];
      const pgss = (await serverTimes(c)).claim ?? { calls: 0, ms: 0 };
      const ready = await one<{ b: string }>(
        c,
        `SELECT coalesce(sum(pg_relation_size(i.indexrelid)), 0) AS b FROM pg_index AS i
         WHERE pg_get_indexdef(i.indexrelid) LIKE '%(priority, run_at, id) WHERE%'`,
      );
      windows.push({
        jobsSincePin: life.completed,
        claimClientMeanMs: mean(life.claimMs),
        claimClientP50Ms: quantile(life.claimMs, 0.5),
        claimClientP99Ms: quantile(life.claimMs, 0.99),
        claimServerMeanMs: (pgss.ms - pgssBefore.ms) / Math.max(1, pgss.calls - pgssBefore.calls),
        completeClientMeanMs: mean(life.completeMs),
        sampleExecMs: plan["Execution Time"],
        sampleSharedHit: plan.Plan["Shared Hit Blocks"],
        sampleSharedRead: plan.Plan["Shared Read Blocks"],
        sampleIndexes: [...JSON.stringify(plan).matchAll(/"Index Name":"([^"]+)"/g)].map((m) => m[1]).join(","),
        readyIndexBytes: Number(ready.b),
      });
      pgssBefore = pgss;
      life.claimMs = [];
      life.completeMs = [];
      const w = windows.at(-1) as Record<string, number>;
      process.stderr.write(
        `  ${variant}#${repeat} ${w.jobsSincePin} jobs: claim mean ${w.claimClientMeanMs!.toFixed(2)} ms p99 ${w.claimClientP99Ms!.toFixed(2)} ms, sample ${w.sampleSharedHit} buffers\n`,
      );
    }
  }
  const wallMs = performance.now() - t0;
  const wal = await walSince(c, lsn);
  const size = await sizes(c, variant);
  await pin.query("COMMIT");
  await pin.end();
  await c.end();
  await dropDatabase(server, name);
  return { phase: "pinned", variant, repeat, jobs: life.completed, batch: BATCH, wallMs, walBytesPerJob: wal / life.completed, size, windows };
}

// ---------------------------------------------------------------- report

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}
function cell(xs: number[], digits = 0, scale = 1): string {
  const v = xs.map((x) => x / scale);
  if (v.length === 0) return "–";
  const f = (x: number) => x.toFixed(digits);
  return v.length === 1 ? f(v[0]!) : `${f(median(v))} (${f(Math.min(...v))}–${f(Math.max(...v))})`;
}

function report(files: string[]): void {
  // Raw JSON lines, read as they were written.
  const runs: any[] = files.flatMap((f) => readFileSync(f, "utf8").trim().split("\n").filter(Boolean).map((l) => JSON.parse(l)));
  const variants = (Object.keys(VARIANTS) as Variant[]).filter((v) => runs.some((r) => r.variant === v));
  const steadyRuns = runs.filter((r) => r.phase === "steady");
  const MB = 1024 * 1024;
  if (steadyRuns.length > 0) {
    const by = (v: Variant) => steadyRuns.filter((r) => r.variant === v);
    console.log(`Steady state, no held xmin: ${by(variants[0]!)[0]?.jobs} jobs a run, batches of ${BATCH}; median (min–max) of ${by(variants[0]!).length} runs.\n`);
    console.log("| Layout | server µs/job | insert / claim / complete µs | WAL bytes/job | versions/job (ins+upd) | upd/job (HOT) | del/job | size after the run, MB (of it the live table) | jobs/s (client) |");
    console.log("|---|---|---|---|---|---|---|---|---|");
    for (const v of variants) {
      const rs = by(v);
      const st = (k: string) => rs.map((r) => r.serverUsPerJobByStatement[k] ?? 0);
      console.log(
        `| ${VARIANTS[v].label} | ${cell(rs.map((r) => r.serverUsPerJob), 1)} | ${median(st("insert")).toFixed(1)} / ${median(st("claim")).toFixed(1)} / ${median(st("complete")).toFixed(1)} | ${cell(rs.map((r) => r.walBytesPerJob))} | ${cell(rs.map((r) => r.tuples.insPerJob + r.tuples.updPerJob), 2)} | ${median(rs.map((r) => r.tuples.updPerJob)).toFixed(2)} (${median(rs.map((r) => r.tuples.hotUpdPerJob)).toFixed(2)}) | ${median(rs.map((r) => r.tuples.delPerJob)).toFixed(2)} | ${cell(rs.map((r) => r.size.total), 1, MB)} (${cell(rs.map((r) => r.size.live), 1, MB)}) | ${cell(rs.map((r) => r.jobsPerSec))} |`,
      );
    }
    console.log("\nRetention of every finished job of the run (DELETE in batches of 1,000 for A; DROP of the day partitions for B–D):\n");
    console.log("| Layout | statements | time, ms | WAL, kB | then VACUUM, ms | VACUUM WAL, kB | size after, MB |");
    console.log("|---|---|---|---|---|---|---|");
    for (const v of variants) {
      const rs = by(v);
      console.log(
        `| ${VARIANTS[v].label} | ${median(rs.map((r) => r.retention.statements))} | ${cell(rs.map((r) => r.retention.ms), 1)} | ${cell(rs.map((r) => r.retention.walBytes), 0, 1024)} | ${cell(rs.map((r) => r.retention.vacuumMs), 1)} | ${cell(rs.map((r) => r.retention.vacuumWalBytes), 0, 1024)} | ${cell(rs.map((r) => r.retention.sizeAfter), 1, MB)} |`,
      );
    }
  }
  const pinnedRuns = runs.filter((r) => r.phase === "pinned");
  if (pinnedRuns.length > 0) {
    const by = (v: Variant) => pinnedRuns.filter((r) => r.variant === v);
    const marks = [...new Set(pinnedRuns.flatMap((r) => r.windows.map((w: { jobsSincePin: number }) => w.jobsSincePin)))].sort((a, b) => a - b);
    const pick = marks.filter((_, i) => i === 0 || (i + 1) % 4 === 0 || i === marks.length - 1);
    const table = (title: string, key: string, digits: number, scale = 1) => {
      console.log(`\n${title}\n`);
      console.log(`| jobs since the pin | ${variants.map((v) => VARIANTS[v].label).join(" | ")} |`);
      console.log(`|---|${variants.map(() => "---").join("|")}|`);
      for (const m of pick) {
        const cells = variants.map((v) =>
          cell(
            by(v).flatMap((r) => r.windows.filter((w: { jobsSincePin: number }) => w.jobsSincePin === m).map((w: Record<string, number>) => w[key]!)),
            digits,
            scale,
          ),
        );
        console.log(`| ${m.toLocaleString("en")} | ${cells.join(" | ")} |`);
      }
    };
    console.log(`\nHeld xmin (BEGIN; SELECT txid_current() in another session), head-of-index claim of ${BATCH}; median (min–max) of ${by(variants[0]!).length} runs, each window the ${WINDOW} jobs before the mark.`);
    table("Claim latency, client mean over the window, ms:", "claimClientMeanMs", 2);
    table("Claim latency, client p99 over the window, ms:", "claimClientP99Ms", 2);
    table("Claim server time, mean over the window (pg_stat_statements), ms:", "claimServerMeanMs", 2);
    table("Buffers one claim touches (EXPLAIN (ANALYZE, BUFFERS) sample at the mark, shared hit):", "sampleSharedHit", 0);
    table("Completion latency, client mean over the window, ms:", "completeClientMeanMs", 3);
    table("Ready index (priority, run_at, id) size at the mark, kB:", "readyIndexBytes", 0, 1024);
    console.log("\n| Layout | wall time of the pinned run, s | WAL bytes/job | size at the end, MB |");
    console.log("|---|---|---|---|");
    for (const v of variants) {
      const rs = by(v);
      console.log(`| ${VARIANTS[v].label} | ${cell(rs.map((r) => r.wallMs / 1000), 1)} | ${cell(rs.map((r) => r.walBytesPerJob))} | ${cell(rs.map((r) => r.size.total), 1, MB)} |`);
    }
  }
}

// ---------------------------------------------------------------- main

async function main(): Promise<void> {
  if (args.report) {
    report(process.argv.slice(2).filter((a) => a.endsWith(".jsonl")));
    return;
  }
  const variants = args.variants!.split(",") as Variant[];
  for (const v of variants) if (!(v in VARIANTS)) throw new Error(`unknown variant ${v}`);
  const repeats = Number(args.repeats);
  const phase = args.phase!;
  const jobs = Number(args.jobs ?? 100_000);
  mkdirSync(dirname(args.out!), { recursive: true });
  const server = await startServer();
  try {
    const c = new pg.Client(server.url("postgres"));
    await c.connect();
    const version = (await one<{ v: string }>(c, "SELECT version() AS v")).v;
    await c.end();
    process.stderr.write(`${version}; ${cpus().length} CPUs (${cpus()[0]?.model}), load ${loadavg().map((l) => l.toFixed(1)).join(" ")}\n`);
    const first = Number(args["first-repeat"]);
    for (let r = first; r < first + repeats; r++) {
      // Alternate the order, so no variant always runs first or last.
      const order = r % 2 === 1 ? variants : [...variants].reverse();
      for (const v of order) {
        const startLoad = loadavg()[0];
        const result = phase === "pinned" ? await pinned(server, v, r, jobs) : await steady(server, v, r, jobs);
        const line = { ...result, at: new Date().toISOString(), loadBefore: startLoad, loadAfter: loadavg()[0], server: version };
        appendFileSync(args.out!, `${JSON.stringify(line)}\n`);
        process.stderr.write(`${phase} ${v}#${r}: ${(result.wallMs / 1000).toFixed(1)} s\n`);
      }
    }
  } finally {
    stopServer(server);
  }
}

await main();
