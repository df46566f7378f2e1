/**
 * How long the upgrade to jobs stored by state (migrations 027 and 028)
 * holds writers up, on a schema of `--jobs` finished jobs and a backlog.
 *
 *   npm run build && node bench/experiments/upgrade-stall/run.ts --jobs 1000000
 *
 * For each way of migrating (the copy ahead in batches, then the cutover;
 * and everything in one transaction, as through a pooler in transaction
 * mode) it makes a schema as the build before 027 left it, starts a probe
 * that writes one live job back to back on a connection of its own, runs
 * `migrate`, and prints one JSON line: how long migrate took, and the
 * longest and the 99th percentile of the probe's writes. The longest is the
 * stall a worker's write meets. Uses DATABASE_URL (default: the local
 * server's `test` database); every schema it makes is dropped.
 */
import { randomBytes } from "node:crypto";
import { parseArgs } from "node:util";
import pg from "pg";
import { createSchemaAsOf, loadMigrations, migrate } from "../../../packages/core/dist/src/store/migrate.js";

const { values: args } = parseArgs({
  options: {
    jobs: { type: "string", default: "1000000" },
    live: { type: "string", default: "2000" },
    modes: { type: "string", default: "batched,one-transaction" },
  },
});
const JOBS = Number(args.jobs);
const LIVE = Number(args.live);
const url = process.env.DATABASE_URL ?? "postgres://root@127.0.0.1:5432/test";

async function run(mode: string): Promise<void> {
  const schema = `upgrade_stall_${randomBytes(4).toString("hex")}`;
  const s = `"${schema}"`;
  const pool = new pg.Pool({ connectionString: url, max: 4 });
  try {
    await createSchemaAsOf(pool, schema, loadMigrations().filter((m) => m.version < 27));
    const loadStarted = performance.now();
    await pool.query(
      `INSERT INTO ${s}.jobs (id, tenant, queue, kind, payload, max_attempts, status, finished_at, idempotency_key, result)
       SELECT gen_random_uuid(), 'default', 'q', 'k', jsonb_build_object('n', n), 3, 'succeeded',
              now() - (n % 10080) * interval '1 minute', CASE WHEN n % 3 = 0 THEN 'key-' || n END, '{"ok": true}'
       FROM generate_series(1, $1) AS n`,
      [JOBS],
    );
    const { rows: live } = await pool.query<{ id: string }>(
      `INSERT INTO ${s}.jobs (id, tenant, queue, kind, payload, max_attempts)
       SELECT gen_random_uuid(), 'default', 'q', 'k', '{}', 3 FROM generate_series(1, $1) RETURNING id`,
      [LIVE],
    );
    await pool.query(`VACUUM ANALYZE ${s}.jobs`);
    const loadedS = (performance.now() - loadStarted) / 1000;

    const probe = new pg.Client({ connectionString: url });
    await probe.connect();
    const latencies: number[] = [];
    const writes: Array<{ at: number; ms: number }> = [];
    let probing = true;
    const probing$ = (async () => {
      for (let n = 0; probing; n++) {
        const started = performance.now();
        // Through the name `jobs`, as a worker's statement: before the
        // cutover the single table, after it the partitioned one.
        await probe.query(`UPDATE ${s}.jobs SET updated_at = now() WHERE id = $1 AND status = 'queued'`, [live[n % live.length]!.id]);
        latencies.push(performance.now() - started);
        writes.push({ at: started, ms: performance.now() - started });
      }
    })();
    const started = performance.now();
    await migrate(pool, schema, { pooled: mode === "one-transaction" });
    const migrateS = (performance.now() - started) / 1000;
    probing = false;
    await probing$;
    await probe.end();
    latencies.sort((a, b) => a - b);
    // The longest writes, by when they began (seconds after migrate began).
    const longest = writes
      .sort((a, b) => b.ms - a.ms)
      .slice(0, 5)
      .map((w) => ({ atS: Number(((w.at - started) / 1000).toFixed(2)), ms: Number(w.ms.toFixed(1)) }));
    const { rows: placed } = await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${s}.job_history`);
    console.log(
      JSON.stringify({
        mode,
        jobs: JOBS,
        live: LIVE,
        loadedS: Number(loadedS.toFixed(1)),
        migrateS: Number(migrateS.toFixed(1)),
        probeWrites: latencies.length,
        longestWriteMs: Number(latencies.at(-1)!.toFixed(1)),
        p99WriteMs: Number(latencies[Math.floor(latencies.length * 0.99)]!.toFixed(2)),
        historyAfter: placed[0]!.n,
        longest,
      }),
    );
  } finally {
    await pool.query(`DROP SCHEMA IF EXISTS ${s} CASCADE`).catch(() => {});
    await pool.end();
  }
}

for (const mode of args.modes.split(",")) await run(mode);
