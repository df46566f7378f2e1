/**
 * Scenario: a graph of 2,000 jobs (a layered backbone, fan-outs, fan-ins,
 * chains and a diamond, linked to one another) enqueued with enqueueFlow,
 * and four batches with callbacks enqueued with enqueueBatch, run on four
 * worker processes while workers are SIGKILLed, SIGSTOPped past their
 * leases, and PostgreSQL (a server of the test's own) restarts once in
 * immediate mode. Judged on the tables afterwards:
 *
 * - every job has exactly one succeeded execution and nothing is left
 *   waiting, queued, retrying or running;
 * - no job's first execution started before the last of its dependencies'
 *   succeeded executions finished (the release is in the completion's
 *   transaction, so a dependent cannot be claimed before it commits);
 * - every batch callback has exactly one execution: released once, run
 *   once. The callbacks run on a queue of their own served by a fifth
 *   worker that is never signalled, and the restart waits for them, so a
 *   second execution could only come from a second release, not from a
 *   fault of the worker that ran it.
 */
import { describe, expect, it } from "vitest";
import type { FlowJob } from "../../packages/core/src/index.js";
import type { CliProcess } from "../worker-processes/process-helpers.js";
import { between, onDedicatedServer, sleep, summary } from "./harness.js";
import { waitFor } from "../helpers/wait-for.js";

/** Nodes of the graph enqueued with enqueueFlow (the batches come on top). */
const NODES = 2_000;
const BATCHES = 4;
const BATCH_MEMBERS = 50;
const WORKERS = 4;
const LEASE_MS = 2_000;
const DRAIN_BOUND_MS = 180_000;
/** Enough attempts that failures in the outage (the ledger write, the completion) never dead-letter a node. */
const MAX_ATTEMPTS = 20;
const TIMINGS = ["--lease-ms", String(LEASE_MS), "--heartbeat-ms", "500", "--reclaim-interval-ms", "500", "--poll-interval-ms", "100"];
const ARGS = ["--concurrency", "8", "--queues", "default", ...TIMINGS];
// The callbacks' worker rides out nothing but the restart, which waits for the callbacks anyway.
const CALLBACK_ARGS = ["--concurrency", "4", "--queues", "callbacks", "--lease-ms", "10000", "--heartbeat-ms", "1000", "--reclaim-interval-ms", "500", "--poll-interval-ms", "100"];

/** Faults in order, each when this share of all jobs has succeeded. */
const FAULTS: ReadonlyArray<{ at: number; fault: "kill" | "stop" | "restart" }> = [
  // Three kills before the restart: the restart waits for the batch callbacks,
  // which run last, so on a fast run little is left after it.
  { at: 0.08, fault: "kill" },
  { at: 0.15, fault: "stop" },
  { at: 0.25, fault: "kill" },
  { at: 0.35, fault: "kill" },
  { at: 0.45, fault: "restart" },
  { at: 0.55, fault: "kill" },
  { at: 0.65, fault: "stop" },
  { at: 0.78, fault: "kill" },
];

// Long enough that the graph takes several seconds to drain, so every fault lands while it runs.
const work = () => ({ sleepMs: between(20, 50) });

/**
 * The graph, 2,000 nodes:
 * - `L{k}.{i}`: 30 layers of 40; each node of layer k+1 depends on 3 distinct nodes of layer k (1,200);
 * - `out{f}.root` and `out{f}.{i}`: 5 fan-outs of 40, each root waiting on a node of layer 5 (205);
 * - `in{f}.{i}` and `in{f}.sink`: 5 fan-ins of 40 leaves; layer 0 node i also waits on sink i % 5 (205);
 * - `chain{c}.{i}`: 4 chains of 50, each head waiting on a node of layer 10 (200);
 * - `top`, `mid.{i}`, `bottom`: a diamond of 188 in the middle, top waiting on a node of layer 15 (190).
 */
function graph(): Record<string, FlowJob> {
  const jobs: Record<string, FlowJob> = {};
  const add = (name: string, dependsOn: string[] = []) => {
    jobs[name] = { job: "chaos.work", payload: work(), maxAttempts: MAX_ATTEMPTS, dependsOn };
  };
  for (let f = 0; f < 5; f++) {
    for (let i = 0; i < 40; i++) add(`in${f}.${i}`);
    add(`in${f}.sink`, Array.from({ length: 40 }, (_, i) => `in${f}.${i}`));
  }
  for (let k = 0; k < 30; k++) {
    for (let i = 0; i < 40; i++) {
      if (k === 0) {
        add(`L0.${i}`, [`in${i % 5}.sink`]);
        continue;
      }
      const parents = new Set<number>();
      while (parents.size < 3) parents.add(between(0, 39));
      add(`L${k}.${i}`, [...parents].map((p) => `L${k - 1}.${p}`));
    }
  }
  for (let f = 0; f < 5; f++) {
    add(`out${f}.root`, [`L5.${f}`]);
    for (let i = 0; i < 40; i++) add(`out${f}.${i}`, [`out${f}.root`]);
  }
  for (let c = 0; c < 4; c++) {
    for (let i = 0; i < 50; i++) add(`chain${c}.${i}`, [i === 0 ? `L10.${c}` : `chain${c}.${i - 1}`]);
  }
  add("top", ["L15.0"]);
  for (let i = 0; i < 188; i++) add(`mid.${i}`, ["top"]);
  add("bottom", Array.from({ length: 188 }, (_, i) => `mid.${i}`));
  expect(Object.keys(jobs)).toHaveLength(NODES);
  return jobs;
}

describe("chaos: a flow graph under SIGKILL, SIGSTOP and a PostgreSQL restart", () => {
  it(`runs ${NODES} dependent jobs and ${BATCHES} batches each once, never before their dependencies`, async () => {
    await onDedicatedServer("flow-graph", async (r, server) => {
      const pool: Array<CliProcess | null> = Array.from({ length: WORKERS }, () => r.spawn(ARGS));
      const callbackWorker = r.spawn(CALLBACK_ARGS);
      await Promise.all([...pool, callbackWorker].map((w) => w!.ready()));

      const flow = await r.conveyor.flows.enqueue({ name: "chaos graph", jobs: graph() });
      const callbacks: string[] = [];
      for (let b = 0; b < BATCHES; b++) {
        const batch = await r.conveyor.flows.enqueueBatch({
          name: `chaos batch ${b}`,
          jobs: Array.from({ length: BATCH_MEMBERS }, () => ({ job: "chaos.work", payload: work(), maxAttempts: MAX_ATTEMPTS })),
          callback: { job: "chaos.work", payload: work(), queue: "callbacks", maxAttempts: MAX_ATTEMPTS, when: b % 2 === 0 ? "always" : "succeeded" },
        });
        callbacks.push(batch.callback.id);
      }
      const total = NODES + BATCHES * (BATCH_MEMBERS + 1);
      const enqueuedAt = Date.now();
      r.startLeaseMonitor();

      const done: string[] = [];
      let stop = false;
      /** Succeeded share of all jobs; null while the server is away. */
      const progress = async (): Promise<number | null> => {
        try {
          const [row] = await r.q<{ n: number }>(`SELECT count(*)::int AS n FROM ${r.s}.jobs WHERE status = 'succeeded'`);
          return row!.n / total;
        } catch {
          return null;
        }
      };
      const live = () => pool.flatMap((w, index) => (w ? [index] : []));
      const replacements: Promise<void>[] = [];
      const faults = (async () => {
        for (const { at, fault } of FAULTS) {
          for (;;) {
            if (stop) return;
            const share = await progress();
            if (share !== null && share >= 0.97) return; // the tail drains in peace
            if (share !== null && share >= at && live().length > 0) break;
            await sleep(20);
          }
          const index = live()[between(0, live().length - 1)]!;
          const victim = pool[index]!;
          if (fault === "kill") {
            pool[index] = null;
            victim.signal("SIGKILL");
            await victim.waitForExit(10_000);
            replacements.push(
              (async () => {
                await sleep(between(0, 500));
                const replacement = r.spawn(ARGS);
                await replacement.ready();
                pool[index] = replacement;
              })(),
            );
            done.push("SIGKILL");
          } else if (fault === "stop") {
            pool[index] = null; // not killed while frozen
            victim.signal("SIGSTOP");
            const frozenAt = Date.now();
            await sleep(LEASE_MS + between(1_000, 2_000));
            victim.signal("SIGCONT");
            pool[index] = victim;
            done.push(`SIGSTOP ${((Date.now() - frozenAt) / 1000).toFixed(1)} s`);
          } else {
            // The callbacks must have run before the outage (see the header).
            await waitFor(
              "the batch callbacks to succeed before the restart",
              async () => {
                const rows = await r.q<{ n: number }>(`SELECT count(*)::int AS n FROM ${r.s}.jobs WHERE id = ANY($1::uuid[]) AND status = 'succeeded'`, [callbacks]);
                return rows[0]!.n === callbacks.length;
              },
              60_000,
              50,
            );
            // A replacement starting while the server is down would exit at start: let them start first.
            await Promise.all(replacements);
            const downAt = Date.now();
            await server.restartAfter("immediate", 1_000);
            done.push(`restart ${((Date.now() - downAt) / 1000).toFixed(1)} s`);
          }
        }
      })();

      try {
        await faults;
        await Promise.all(replacements);
        const drainSeconds = await r.drained(DRAIN_BOUND_MS, enqueuedAt, () => [callbackWorker]);
        const maxOverdueMs = await r.stopLeaseMonitor();
        await r.stopWorkers();

        const verdict = await r.judge({ allowDuplicates: ["after_lease_expiry", "late_stale_owner", "after_failure"] });
        // Each node: exactly one succeeded execution.
        const notOnce = await r.q(
          `SELECT j.id, j.status, count(e.id) FILTER (WHERE e.outcome = 'succeeded')::int AS successes
             FROM ${r.s}.jobs AS j LEFT JOIN ${r.s}.job_attempts AS e ON e.job_id = j.id
            GROUP BY j.id, j.status HAVING count(e.id) FILTER (WHERE e.outcome = 'succeeded') <> 1 LIMIT 10`,
        );
        // Each dependent: its first execution started no earlier than its dependencies' last success ended.
        const early = await r.q<{ job_id: string; first_started: Date; last_parent: Date }>(
          `WITH first AS (SELECT job_id, min(started_at) AS first_started FROM ${r.s}.job_attempts GROUP BY job_id),
                parents AS (
                  SELECT d.job_id, max(e.finished_at) AS last_parent, count(DISTINCT d.depends_on)::int AS parents,
                         count(DISTINCT e.job_id)::int AS succeeded_parents
                    FROM ${r.s}.job_dependencies AS d
                    LEFT JOIN ${r.s}.job_attempts AS e ON e.job_id = d.depends_on AND e.outcome = 'succeeded'
                   GROUP BY d.job_id)
           SELECT p.job_id, f.first_started, p.last_parent
             FROM parents AS p LEFT JOIN first AS f ON f.job_id = p.job_id
            WHERE f.first_started IS NULL OR p.succeeded_parents <> p.parents OR f.first_started < p.last_parent
            LIMIT 10`,
        );
        const [edges] = await r.q<{ n: number; dependents: number }>(
          `SELECT count(*)::int AS n, count(DISTINCT job_id)::int AS dependents FROM ${r.s}.job_dependencies`,
        );
        const callbackRuns = await r.q<{ id: string; executions: number }>(
          `SELECT j.id, count(e.id)::int AS executions FROM ${r.s}.jobs AS j LEFT JOIN ${r.s}.job_attempts AS e ON e.job_id = j.id
            WHERE j.id = ANY($1::uuid[]) GROUP BY j.id`,
          [callbacks],
        );
        // From the server's log: the immediate restart resets pg_stat_database's counters.
        const deadlocksDuring = server.grep(/deadlock detected/i).length;
        const problems = r.logProblems();
        summary(
          "flow-graph",
          verdict,
          `${done.join(", ")}`,
          drainSeconds,
          `${edges!.n} edges into ${edges!.dependents} dependents, ${verdict.outcomes.lease_expired ?? 0} leases expired, ` +
            `${verdict.outcomes.failed ?? 0} attempts failed, ${deadlocksDuring} deadlocks broken and retried, ` +
            `longest overdue lease ${(maxOverdueMs / 1000).toFixed(1)} s`,
        );

        expect(verdict.violations).toEqual([]);
        expect(verdict.jobs).toBe(total);
        expect(verdict.statuses).toEqual({ succeeded: total });
        expect(notOnce).toEqual([]);
        expect(early).toEqual([]);
        expect(edges!.dependents).toBe(NODES - 5 * 40 + BATCHES); // all but the fan-ins' leaves, and the callbacks
        expect(callbackRuns.map((row) => row.executions)).toEqual(callbacks.map(() => 1));
        expect(flow.jobs["bottom"]!.status).toBe("waiting");
        // Completions sharing dependents release them at commit in id order: they wait, never deadlock.
        expect(problems).toEqual([]);
        expect(deadlocksDuring).toBe(0);
        expect(done.filter((f) => f === "SIGKILL").length).toBeGreaterThanOrEqual(3);
        expect(done.filter((f) => f.startsWith("SIGSTOP")).length).toBeGreaterThanOrEqual(1);
        expect(done.filter((f) => f.startsWith("restart"))).toHaveLength(1);
        expect(verdict.outcomes.lease_expired ?? 0).toBeGreaterThan(0);
        expect(maxOverdueMs).toBeLessThan(10_000);
      } finally {
        stop = true;
        await Promise.allSettled([faults, ...replacements]);
      }
    });
  }, 300_000);
});
