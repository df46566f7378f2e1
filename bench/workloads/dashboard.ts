import { type AnyJobDefinition, Conveyor, defineJob } from "conveyor-jobs";
import { startApiServer } from "conveyor-jobs-http";
import pg from "pg";
import pino from "pino";
import { z } from "zod";
import { now, sleep } from "../lib/clock.js";
import { analyzeDatabase, createDatabase } from "../lib/postgres.js";
import { WorkerProcess } from "../lib/worker-process.js";

/**
 * The dashboard at scale, Conveyor only: a store of `jobs` jobs (a tenth
 * waiting to run, eight tenths succeeded with their attempt, a tenth dead
 * with their dead letters; over 1,000 kinds, 100 tenants and 10 queues,
 * created over the last week) read through the HTTP API, as a dashboard
 * and an on-call engineer read it:
 * - p50 and p95 of the overview, a filtered list (dead jobs of one queue),
 *   a payload search (one customer, with the documented GIN index) and a
 *   job page, each over `requests` requests after a warm-up;
 * - a bulk retry of the dead jobs of one queue (a tenth of the dead ones:
 *   100,000 at ten million), timed from its request to its end, with a
 *   worker process claiming no-op jobs from another queue all along: its
 *   rate while the action runs against its rate in phases without it.
 */
export interface DashboardBenchOptions {
  jobs: number;
  requests: number;
  /** Jobs the live worker finds waiting (more than it can run during the measurement). */
  liveJobs: number;
  /** How long each phase with and without the bulk action lasts. */
  phaseMs: number;
  log: (message: string) => void;
}

/** Latencies in milliseconds. */
export interface Percentiles {
  p50: number;
  p95: number;
}

export interface DashboardBenchResult {
  jobs: number;
  fillSeconds: number;
  overview: Percentiles;
  filteredList: Percentiles;
  payloadSearch: Percentiles;
  jobPage: Percentiles;
  /**
   * `seconds`: the time the action ran, over `phases` phases; `ratio`: the
   * mean over those phases of the worker's rate in each against the phases
   * without the action on either side.
   */
  bulkRetry: { jobs: number; seconds: number; phases: number; claimRateAlone: number; claimRateDuring: number; ratio: number };
}

const QUEUES = 10;
const KINDS = 1_000;
const TENANTS = 100;
const CUSTOMERS = 100_000;
const FILL_CHUNK = 500_000;
const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * Rows of every state, made in the database: one INSERT … SELECT per chunk
 * for jobs, one for their executions and one for the dead letters. Ids are
 * UUIDv7 of their creation time, as the library makes them.
 */
async function fill(client: pg.Client, total: number, log: (message: string) => void): Promise<void> {
  const nowMs = Date.now();
  for (let from = 0; from < total; from += FILL_CHUNK) {
    const to = Math.min(total, from + FILL_CHUNK) - 1;
    await client.query("BEGIN");
    // n: the row number; state by n % 10 (0 waiting, 9 dead, else succeeded); created over the last 7 days, oldest first.
    await client.query(
      `WITH numbered AS (
         SELECT n, $3::bigint - ((($4::bigint - n) * 7 * ${DAY_MS}) / $4::bigint) AS created_ms
         FROM generate_series($1::bigint, $2::bigint) AS n
       ), inserted AS (
         INSERT INTO jobs (id, tenant, queue, kind, payload, priority, status, attempts, max_attempts, run_at,
                           last_error, created_at, updated_at, started_at, finished_at)
         SELECT (lpad(to_hex(created_ms), 12, '0') || '7' || substr(md5(n::text), 1, 3) || '8' || substr(md5(n::text), 4, 15))::uuid,
                'tenant-' || abs(hashint8(n) % ${TENANTS}), 'dash-q' || ((n / 10) % ${QUEUES}), 'kind-' || abs(hashint8(n + 1) % ${KINDS}),
                jsonb_build_object('customerId', n % ${CUSTOMERS}, 'orderId', n),
                10,
                CASE n % 10 WHEN 0 THEN 'queued' WHEN 9 THEN 'dead' ELSE 'succeeded' END,
                CASE n % 10 WHEN 0 THEN 0 WHEN 9 THEN 3 ELSE 1 END,
                3,
                to_timestamp(created_ms / 1000.0),
                CASE WHEN n % 10 = 9 THEN jsonb_build_object('name', 'Error', 'message', 'upstream ' || (500 + n % 4) || ' from billing') END,
                to_timestamp(created_ms / 1000.0), to_timestamp(created_ms / 1000.0 + 1),
                CASE WHEN n % 10 = 0 THEN NULL ELSE to_timestamp(created_ms / 1000.0 + 0.5) END,
                CASE WHEN n % 10 = 0 THEN NULL ELSE to_timestamp(created_ms / 1000.0 + 1) END
         FROM numbered
         RETURNING id, status, attempts, started_at, finished_at, last_error
       )
       INSERT INTO job_executions (id, job_id, attempt, worker_id, started_at, finished_at, outcome, error)
       SELECT (substr(id::text, 1, 15) || 'a' || substr(id::text, 17))::uuid, id, attempts, 'bench-worker', started_at, finished_at,
              CASE status WHEN 'dead' THEN 'failed' ELSE 'succeeded' END, last_error
       FROM inserted WHERE status <> 'queued'`,
      [from, to, nowMs, total],
    );
    await client.query("COMMIT");
    log(`dashboard: filled ${(to + 1).toLocaleString("en-US")} of ${total.toLocaleString("en-US")} jobs`);
  }
  // Each dead job is its own dead letter.
  await client.query(`UPDATE jobs_dead SET dead_letter_id = id, dead_reason = 'attempts_exhausted'`);
}

function percentiles(samples: number[]): Percentiles {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
  return { p50: Math.round(at(0.5) * 10) / 10, p95: Math.round(at(0.95) * 10) / 10 };
}

export async function dashboardBench(options: DashboardBenchOptions): Promise<DashboardBenchResult> {
  const database = await createDatabase("dashboard");
  const conveyor = new Conveyor({ connectionString: database.url, jobs: [], logger: pino({ level: "silent" }), poolSize: 8 });
  const client = new pg.Client({ connectionString: database.url });
  let worker: WorkerProcess | null = null;
  let server: Awaited<ReturnType<typeof startApiServer>> | null = null;
  try {
    await conveyor.migrate();
    await client.connect();
    await client.query("SET search_path TO conveyor");
    const fillStarted = now();
    await fill(client, options.jobs, options.log);
    // The payload search's index, as docs/operations.md has users create it.
    await client.query("CREATE INDEX jobs_payload_search_idx ON jobs USING gin (payload jsonb_path_ops)");
    const fillSeconds = (now() - fillStarted) / 1000;
    options.log(`dashboard: ${options.jobs.toLocaleString("en-US")} jobs in ${fillSeconds.toFixed(0)} s; analyzing`);
    await analyzeDatabase(database.url);

    server = await startApiServer(conveyor, { port: 0, host: "127.0.0.1", logger: pino({ level: "silent" }) });
    const { key } = await conveyor.apiKeys.create({ admin: true, name: "bench" });
    const get = async (path: string): Promise<number> => {
      const started = now();
      const response = await fetch(`${server!.url}${path}`, { headers: { authorization: `Bearer ${key}` } });
      await response.arrayBuffer();
      if (response.status !== 200) throw new Error(`GET ${path}: ${response.status}`);
      return now() - started;
    };
    const sample = async (name: string, paths: () => string): Promise<Percentiles> => {
      for (let i = 0; i < 5; i++) await get(paths());
      const times: number[] = [];
      for (let i = 0; i < options.requests; i++) times.push(await get(paths()));
      const result = percentiles(times);
      options.log(`dashboard: ${name} p50 ${result.p50} ms, p95 ${result.p95} ms`);
      return result;
    };
    const { rows: jobIds } = await client.query<{ id: string }>(
      "SELECT id FROM jobs TABLESAMPLE SYSTEM (0.1) LIMIT 1000",
    );
    let pick = 0;
    const overview = await sample("overview", () => "/v1/overview");
    const filteredList = await sample("filtered list", () => `/v1/jobs?status=dead&queue=dash-q${pick++ % QUEUES}`);
    const payloadSearch = await sample("payload search", () => `/v1/jobs?payload=${encodeURIComponent(JSON.stringify({ customerId: (pick++ * 7919) % CUSTOMERS }))}`);
    const jobPage = await sample("job page", () => `/v1/jobs/${jobIds[pick++ % jobIds.length]!.id}`);

    // The live worker: no-op jobs of its own kind in the default queue, ahead of the dashboard's jobs in claim order.
    const noop = defineJob({ kind: "bench.noop", schema: z.object({ n: z.number() }), handler: () => {} }) as unknown as AnyJobDefinition;
    const live = new Conveyor({ connectionString: database.url, jobs: [noop], logger: pino({ level: "silent" }) });
    for (let from = 0; from < options.liveJobs; from += 10_000) {
      await live.enqueueMany(Array.from({ length: Math.min(10_000, options.liveJobs - from) }, (_, i) => ({ job: noop, payload: { n: from + i } })));
    }
    await live.close();
    await analyzeDatabase(database.url);
    worker = await WorkerProcess.spawn("conveyor", "perJob", database.url);
    await worker.start();
    await sleep(1_000);
    // The worker's rate drifts down over the run (its own dead rows, autovacuum), so the
    // action runs in phases of `phaseMs` (cancelled at each phase's end and started again:
    // a bulk action is safe to repeat), alternating with phases without it, and each
    // phase with it is compared with the phases on both sides.
    const dead = Math.floor(options.jobs / 10 / QUEUES);
    const headers = { authorization: `Bearer ${key}`, "content-type": "application/json" };
    const rateOver = async (span: () => Promise<void>): Promise<number> => {
      const from = await worker!.progress();
      await span();
      const to = await worker!.progress();
      return (to.count - from.count) / ((to.t - from.t) / 1000);
    };
    type Action = { id: string; status: string; touched: number };
    const read = async (id: string): Promise<Action> => (await (await fetch(`${server!.url}/v1/bulk-actions/${id}`, { headers })).json()) as Action;
    const alone: number[] = [await rateOver(() => sleep(options.phaseMs))];
    const during: number[] = [];
    let touched = 0;
    let seconds = 0;
    let done = false;
    while (!done) {
      during.push(
        await rateOver(async () => {
          const started = now();
          const response = await fetch(`${server!.url}/v1/bulk-actions`, {
            method: "POST",
            headers,
            body: JSON.stringify({ action: "retry", filter: { status: "dead", queue: "dash-q9" } }),
          });
          let state = (await response.json()) as Action;
          if (response.status !== 202) throw new Error(`bulk retry: ${response.status} ${JSON.stringify(state)}`);
          while (state.status === "running" && now() - started < options.phaseMs) {
            await sleep(100);
            state = await read(state.id);
          }
          if (state.status === "running") await fetch(`${server!.url}/v1/bulk-actions/${state.id}/cancel`, { method: "POST", headers });
          while (state.status === "running") {
            await sleep(50);
            state = await read(state.id);
          }
          seconds += (now() - started) / 1000;
          touched += state.touched;
          done = state.status === "succeeded";
          if (!done && state.status !== "cancelled") throw new Error(`bulk retry ended ${state.status}`);
        }),
      );
      alone.push(await rateOver(() => sleep(options.phaseMs)));
    }
    if (touched !== dead) throw new Error(`bulk retry touched ${touched} of ${dead} dead jobs`);
    const { rows: left } = await client.query("SELECT EXISTS (SELECT 1 FROM jobs WHERE kind = 'bench.noop' AND status = 'queued') AS left");
    if (!left[0].left) throw new Error(`the worker ran out of jobs before the measurement ended: raise the live jobs above ${options.liveJobs}`);
    // Each phase with the action against the mean of the phases without it on either side.
    const ratios = during.map((rate, i) => rate / ((alone[i]! + alone[i + 1]!) / 2));
    const mean = (values: number[]) => values.reduce((sum, v) => sum + v, 0) / values.length;
    const ratio = mean(ratios);
    const claimRateAlone = mean(alone);
    const claimRateDuring = mean(during);
    const bulkRetry = { jobs: dead, seconds, phases: during.length, claimRateAlone, claimRateDuring, ratio };
    options.log(
      `dashboard: bulk retry of ${dead.toLocaleString("en-US")} dead jobs in ${seconds.toFixed(1)} s; ` +
        `over ${during.length} phases of ${options.phaseMs / 1000} s, the worker ${Math.round(claimRateDuring)} jobs/s with it, ${Math.round(claimRateAlone)} without ` +
        `(${Math.round(ratio * 100)}%; phases ${ratios.map((r) => `${Math.round(r * 100)}%`).join(" ")})`,
    );
    return { jobs: options.jobs, fillSeconds, overview, filteredList, payloadSearch, jobPage, bulkRetry };
  } finally {
    await worker?.stop().catch(() => worker?.kill());
    await server?.close().catch(() => {});
    await client.end().catch(() => {});
    await conveyor.close().catch(() => {});
    await database.drop().catch(() => {});
  }
}
