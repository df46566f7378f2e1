/**
 * Scenario 5: the LISTEN connection is reset. Two workers reach PostgreSQL
 * through the fault proxy, which tags each connection by the
 * application_name of its startup message. Four phases, jobs enqueued one
 * at a time in each and their wake-up latency (claim time minus enqueue
 * time, database clock) measured:
 *
 * 1. healthy: NOTIFY wakes a worker at once;
 * 2. the proxy resets the LISTEN connections and refuses new ones for 5 s:
 *    polling (every second) keeps jobs flowing;
 * 3. the proxy lets them through again: LISTEN is re-established (log line,
 *    a new listener backend) and wake-ups are immediate again;
 * 4. the server kills the listener backends (pg_terminate_backend): the same
 *    recovery, from the other side of the connection.
 */
import { describe, expect, it } from "vitest";
import type { CliProcess } from "../worker-processes/process-helpers.js";
import type { ProxiedConnection } from "./fault-proxy.js";
import { deadlocks, proxiedChaosFile, sleep, summary, viaPort } from "./harness.js";
import { waitFor } from "../helpers/wait-for.js";

const PER_PHASE = 15;
const POLL_MS = 1_000;
const OUTAGE_MS = 5_000;
const DRAIN_BOUND_MS = 90_000;
const ARGS = ["--concurrency", "4", "--lease-ms", "5000", "--heartbeat-ms", "1000", "--reclaim-interval-ms", "1000", "--poll-interval-ms", String(POLL_MS)];
const LOST = "LISTEN connection lost; polling meanwhile";
const BACK = "LISTEN connection re-established";
const isListener = (connection: ProxiedConnection) => connection.tags.application_name === "conveyor-listener";

const file = proxiedChaosFile();

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}

describe("chaos: the LISTEN connection reset", () => {
  it("keeps jobs flowing by polling while LISTEN is down, and re-establishes it", async () => {
    const r = await file.start("listen-reset");
    const deadlocksBefore = await deadlocks(file.database.url);
    const workers = [0, 1].map(() => r.spawn(ARGS, { databaseUrl: viaPort(file.database.url, file.proxy.port) }));
    await Promise.all(workers.map((w) => w.ready()));
    const startedAt = Date.now();
    const count = (w: CliProcess, msg: string) => w.logs().filter((line) => line.msg === msg).length;
    const listenerBackends = () =>
      r.q<{ pid: number }>(
        "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'conveyor-listener' ORDER BY pid",
      );

    /** Enqueue jobs one at a time over `spreadMs`; return their wake-up latencies in ms once all have succeeded. */
    const phase = async (spreadMs: number): Promise<number[]> => {
      const ids: string[] = [];
      for (let i = 0; i < PER_PHASE; i += 1) {
        ids.push(...(await r.enqueue([{ job: "chaos.work", payload: {} }])));
        await sleep(spreadMs / PER_PHASE);
      }
      await waitFor(
        "the phase's jobs to succeed",
        async () => {
          const [row] = await r.q<{ n: number }>(`SELECT count(*)::int AS n FROM ${r.s}.jobs WHERE id = ANY($1::uuid[]) AND status = 'succeeded'`, [ids]);
          return row!.n === ids.length;
        },
        POLL_MS * 5,
        50,
      );
      const rows = await r.q<{ ms: number }>(
        `SELECT extract(epoch FROM e.started_at - j.created_at) * 1000 AS ms
           FROM ${r.s}.jobs AS j JOIN ${r.s}.job_attempts AS e ON e.job_id = j.id WHERE j.id = ANY($1::uuid[])`,
        [ids],
      );
      return rows.map((row) => Number(row.ms));
    };

    // 1. Healthy.
    const healthy = await phase(2_000);
    const firstBackends = await listenerBackends();
    expect(firstBackends).toHaveLength(2);

    // 2. LISTEN connections reset at the proxy and refused for OUTAGE_MS; polling carries the work.
    file.proxy.refuseWhere(isListener);
    const resets = file.proxy.reset(isListener);
    expect(resets).toBe(2);
    for (const w of workers) await w.waitForLog(LOST, 5_000);
    const outageStart = Date.now();
    const down = await phase(OUTAGE_MS - 1_000);
    expect(Date.now() - outageStart).toBeLessThan(OUTAGE_MS + POLL_MS * 5);
    await sleep(Math.max(0, outageStart + OUTAGE_MS - Date.now()));
    for (const w of workers) expect(count(w, BACK)).toBe(0); // really down the whole time
    file.proxy.refuseWhere(null);

    // 3. Re-established through the proxy.
    await waitFor("both workers to re-establish LISTEN", () => workers.every((w) => count(w, BACK) >= 1), 15_000);
    await waitFor("two listener backends again", async () => (await listenerBackends()).length === 2, 10_000);
    const restored = await phase(2_000);

    // 4. The server terminates the listener backends.
    const before = (await listenerBackends()).map((row) => row.pid);
    await r.q("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'conveyor-listener'");
    await waitFor("both workers to re-establish LISTEN again", () => workers.every((w) => count(w, BACK) >= 2), 15_000);
    const after = (await listenerBackends()).map((row) => row.pid);
    expect(after).toHaveLength(2);
    for (const pid of after) expect(before).not.toContain(pid);
    const terminated = await phase(2_000);

    const drainSeconds = await r.drained(DRAIN_BOUND_MS, startedAt, () => workers);
    await r.stopWorkers();
    for (const w of workers) expect(w.exit, w.output()).toEqual({ code: 0, signal: null });

    const verdict = await r.judge({ allowDuplicates: [] });
    const ms = (values: number[]) => `${Math.round(median(values))}/${Math.round(Math.max(...values))} ms`;
    summary(
      "listen-reset",
      verdict,
      `${resets} LISTEN connections reset by the proxy and refused ${OUTAGE_MS / 1000} s, ${before.length} terminated by the server`,
      drainSeconds,
      `wake-up median/max: healthy ${ms(healthy)}, LISTEN down ${ms(down)} (polling every ${POLL_MS} ms), ` +
        `re-established ${ms(restored)}, after server-side kill ${ms(terminated)}`,
    );
    expect(verdict.violations).toEqual([]);
    expect(r.logProblems()).toEqual([]);
    expect(verdict.statuses).toEqual({ succeeded: PER_PHASE * 4 });
    expect(verdict.executions).toBe(PER_PHASE * 4); // no fault on the data path: one attempt each
    expect(verdict.duplicates).toBe(0);
    // Polling bounds the wait while LISTEN is down; NOTIFY makes it short when it is up.
    expect(Math.max(...down)).toBeLessThan(POLL_MS + 1_000);
    for (const latencies of [healthy, restored, terminated]) expect(median(latencies)).toBeLessThan(300);
    expect(await deadlocks(file.database.url), "deadlocks PostgreSQL counted in this scenario's database").toBe(deadlocksBefore);
  }, 180_000);
});
