/**
 * Scenario: something holds back VACUUM. A transaction that holds an xid
 * pins the xmin horizon, so no row version dead since can be removed, from
 * the table or its indexes: every job claimed meanwhile leaves an entry at
 * the head of the ready index that each claim from the head must step over.
 * On a PostgreSQL server of the test's own, at its defaults, one worker
 * process (64 slots, claims of 8, the setting that collapsed first) takes a
 * steady offered load: a clean phase, then the same load while another
 * connection holds an xid, then the load again after it lets go.
 *
 * Judged on the job rows: during the hold the worker completes at least
 * 95% of what is offered, pickup latency (enqueue to start) stays within
 * 3 times the clean phase's p99 (100 ms at least), the table's dead tuples
 * show the hold did hold VACUUM back, and no job is left unfinished soon
 * after the hold ends.
 */
import pg from "pg";
import { describe, expect, it } from "vitest";
import { waitFor } from "../helpers/wait-for.js";
import { onDedicatedServer, sleep } from "./harness.js";

/** Jobs offered per second, in every phase. */
const RATE = 1_000;
const TICK_MS = 50;
const CLEAN_MS = 10_000;
const HOLD_MS = 60_000;
const AFTER_MS = 10_000;
/** Every job must have ended this long after the hold ends. */
const CLEAR_BOUND_MS = 30_000;
const ARGS = ["--concurrency", "64", "--claim-batch-size", "8", "--poll-interval-ms", "100", "--reclaim-interval-ms", "5000"];

interface Phase {
  name: string;
  from: Date;
  to: Date;
}

describe("chaos: a transaction holding back VACUUM", () => {
  it("keeps claims fast and the offered load done while the xmin horizon is held, and clears right after", async () => {
    await onDedicatedServer("held-xmin", async (r) => {
      const worker = r.spawn(ARGS);
      await worker.ready();
      let offering = true;
      let offered = 0;
      const producer = (async () => {
        const perTick = (RATE * TICK_MS) / 1000;
        let next = performance.now();
        while (offering) {
          await r.enqueue(Array.from({ length: perTick }, () => ({ job: "chaos.work" as const, payload: { sleepMs: 1 } })));
          offered += perTick;
          next += TICK_MS;
          const wait = next - performance.now();
          if (wait > 0) await sleep(wait);
        }
      })();
      const now = async () => (await r.q<{ now: Date }>("SELECT clock_timestamp() AS now"))[0]!.now;
      const phases: Phase[] = [];
      const phase = async (name: string, ms: number, during?: () => Promise<void>) => {
        const from = await now();
        await (during ? during() : sleep(ms));
        phases.push({ name, from, to: await now() });
      };

      await phase("clean", CLEAN_MS);
      const holder = new pg.Client({ connectionString: r.databaseUrl });
      await holder.connect();
      let deadAtEnd = 0;
      try {
        await holder.query("BEGIN");
        await holder.query("SELECT txid_current()");
        await phase("hold", HOLD_MS, async () => {
          await sleep(HOLD_MS);
          deadAtEnd = (
            await r.q<{ n: number }>(
              `SELECT coalesce(sum(n_dead_tup), 0)::int AS n FROM pg_stat_user_tables
                WHERE relid IN (SELECT relid FROM pg_partition_tree($1::regclass))`,
              [`${r.s}.jobs`],
            )
          )[0]!.n;
        });
      } finally {
        await holder.query("ROLLBACK").catch(() => {});
        await holder.end();
      }
      await phase("after", AFTER_MS);
      offering = false;
      await producer;
      const holdEnd = phases[1]!.to.getTime();
      // Checked twice a second: each check counts every job, and checked back
      // to back it would take a core from the worker it is timing.
      await waitFor("every job to end after the hold", async () => (await r.statusCounts()).succeeded === offered, CLEAR_BOUND_MS + AFTER_MS, 500);
      const clearedAt = Date.now();

      const stats = await Promise.all(
        phases.map(async ({ name, from, to }) => {
          const [row] = await r.q<{ created: number; done: number; p50: number; p99: number }>(
            `SELECT (SELECT count(*)::int FROM ${r.s}.jobs WHERE created_at >= $1 AND created_at < $2) AS created,
                    (SELECT count(*)::int FROM ${r.s}.jobs WHERE finished_at >= $1 AND finished_at < $2) AS done,
                    percentile_cont(0.5) WITHIN GROUP (ORDER BY pickup) AS p50,
                    percentile_cont(0.99) WITHIN GROUP (ORDER BY pickup) AS p99
               FROM (SELECT extract(epoch FROM min(e.started_at) - j.created_at) * 1000 AS pickup
                       FROM ${r.s}.jobs AS j JOIN ${r.s}.job_attempts AS e ON e.job_id = j.id
                      WHERE j.created_at >= $1 AND j.created_at < $2 GROUP BY j.id, j.created_at) AS p`,
            [from, to],
          );
          const seconds = (to.getTime() - from.getTime()) / 1000;
          return { name, offeredPerS: row!.created / seconds, donePerS: row!.done / seconds, p50: row!.p50, p99: row!.p99 };
        }),
      );
      const [clean, hold, after] = stats as [(typeof stats)[0], (typeof stats)[0], (typeof stats)[0]];
      console.log(
        `[chaos] held-xmin: ${offered} jobs at ${RATE}/s; ` +
          stats.map((s) => `${s.name}: ${s.donePerS.toFixed(0)} of ${s.offeredPerS.toFixed(0)} jobs/s, pickup p50/p99 ${s.p50.toFixed(0)}/${s.p99.toFixed(0)} ms`).join("; ") +
          `; ${deadAtEnd} dead tuples at the hold's end; all done ${((clearedAt - holdEnd) / 1000).toFixed(1)} s after it`,
      );
      expect(deadAtEnd, "the hold kept VACUUM from removing the claimed and completed versions").toBeGreaterThan(hold.donePerS * (HOLD_MS / 1000));
      expect(hold.donePerS).toBeGreaterThanOrEqual(0.95 * hold.offeredPerS);
      expect(hold.p99).toBeLessThanOrEqual(Math.max(3 * clean.p99, 100));
      expect(after.donePerS).toBeGreaterThanOrEqual(0.95 * after.offeredPerS);
      const verdict = await r.judge();
      expect(verdict.violations).toEqual([]);
      expect(r.logProblems()).toEqual([]);
    });
  }, 240_000);
});
