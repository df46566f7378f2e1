/**
 * `node bench/dist/pooler.js [--jobs 20000] [--enqueues 2000] [--runs 3]` (built by `npm run bench`, or `tsc -p bench`)
 *
 * Conveyor through PgBouncer in transaction mode (`pooler: "transaction"`,
 * Debian's pgbouncer, 10 server connections) beside direct connections:
 * processing (JOBS waiting no-op jobs drained by one worker with the main
 * bench's settings; LISTEN on a direct URL) and single enqueues (one
 * `enqueue()` at a time, one caller). Runs alternate between the two on
 * fresh databases; the table gives the median of each and their ratio.
 */
import { parseArgs } from "node:util";
import { type AnyJobDefinition, Conveyor, defineJob } from "conveyor-jobs";
import pino from "pino";
import { z } from "zod";
import { now, sleep } from "./lib/clock.js";
import { startPgBouncer } from "./lib/pgbouncer.js";
import { createDatabase } from "./lib/postgres.js";
import { median } from "./lib/stats.js";

const { values: args } = parseArgs({
  options: { jobs: { type: "string", default: "20000" }, enqueues: { type: "string", default: "2000" }, runs: { type: "string", default: "3" } },
});
const JOBS = Number.parseInt(args.jobs!, 10);
const ENQUEUES = Number.parseInt(args.enqueues!, 10);
const RUNS = Number.parseInt(args.runs!, 10);

type Mode = "direct" | "PgBouncer (transaction)";
const MODES: Mode[] = ["direct", "PgBouncer (transaction)"];

const job = defineJob({ kind: "bench.noop", schema: z.object({ n: z.number() }), handler: () => {} }) as unknown as AnyJobDefinition;

async function run(mode: Mode): Promise<{ processing: number; enqueue: number }> {
  const db = await createDatabase("conveyor_pooler");
  const bouncer = mode === "direct" ? null : await startPgBouncer(db.url, 10);
  const conveyor = new Conveyor({
    connectionString: bouncer ? bouncer.url : db.url,
    ...(bouncer ? { pooler: "transaction" as const, listenConnectionString: db.url } : {}),
    jobs: [job],
    logger: pino({ level: "warn" }),
  });
  try {
    await conveyor.migrate();
    const enqueueStarted = now();
    for (let n = 0; n < ENQUEUES; n++) await conveyor.enqueue(job, { n });
    const enqueue = ENQUEUES / ((now() - enqueueStarted) / 1000);
    await conveyor.enqueueMany(Array.from({ length: JOBS }, (_, n) => ({ job, payload: { n } })));
    await conveyor.pool.query("ANALYZE conveyor.jobs");
    const worker = conveyor.worker({ concurrency: 800, claimBatchSize: 200 });
    const started = now();
    await worker.start();
    for (;;) {
      const { rows } = await conveyor.pool.query("SELECT count(*)::int AS n FROM conveyor.jobs WHERE status <> 'succeeded'");
      if (rows[0].n === 0) break;
      await sleep(20);
    }
    const processing = (JOBS + ENQUEUES) / ((now() - started) / 1000);
    await worker.stop();
    return { processing, enqueue };
  } finally {
    await conveyor.close();
    await bouncer?.stop();
    await db.drop();
  }
}

const results = new Map<Mode, { processing: number[]; enqueue: number[] }>(MODES.map((mode) => [mode, { processing: [], enqueue: [] }]));
for (let i = 0; i < RUNS; i++) {
  for (const mode of MODES) {
    const { processing, enqueue } = await run(mode);
    results.get(mode)!.processing.push(processing);
    results.get(mode)!.enqueue.push(enqueue);
    console.log(`run ${i + 1}, ${mode}: processing ${Math.round(processing)} jobs/s, single enqueue ${Math.round(enqueue)} jobs/s`);
  }
}
const direct = results.get("direct")!;
const pooled = results.get("PgBouncer (transaction)")!;
const row = (name: string, a: number[], b: number[]) =>
  `| ${name} | ${Math.round(median(a)).toLocaleString("en-US")} | ${Math.round(median(b)).toLocaleString("en-US")} | ${(median(b) / median(a)).toFixed(2)}× |`;
console.log(
  [
    "",
    `| median of ${RUNS} (jobs/s) | direct | PgBouncer, transaction mode | ratio |`,
    "|:--|--:|--:|--:|",
    row(`processing ${JOBS.toLocaleString("en-US")} no-op jobs`, direct.processing, pooled.processing),
    row("single enqueue, one caller", direct.enqueue, pooled.enqueue),
  ].join("\n"),
);
