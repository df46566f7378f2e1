/**
 * Scenario: batch handlers under SIGKILL, SIGSTOP and a PostgreSQL crash.
 * 4,000 jobs of chaos.batch (test/fixtures/chaos-jobs.js: batches of at
 * most 20, gathered for 100 ms) run on four worker processes of
 * concurrency 40 against a PostgreSQL server of the test's own. Each batch
 * works 50–200 ms, writes one ledger row per job to succeed outside any
 * transaction (the "email sent"), then, in the batch's `transaction`, one
 * effect row per job to succeed, sits 100–300 ms in that transaction and
 * returns, its writes committed with those jobs' completions; a job whose
 * id ends in "0" fails its first attempt (one in 16). While they run, each
 * fault strikes a batch mid-way (its side effects made, its transaction
 * open or about to be, its jobs not completed): a worker is SIGKILLed and
 * replaced; another is frozen (SIGSTOP) until the others reclaimed what it
 * held (at least a lease), then resumed; PostgreSQL crashes (immediate
 * stop: every backend killed, crash recovery).
 *
 * Judged afterwards on the tables:
 * - every job succeeded, with exactly one succeeded execution (and the
 *   shared judge's criteria: its ledger row made while it owned the job,
 *   every other ledger row explained by a lost lease, a late write of the
 *   frozen worker, or a batch that failed);
 * - each job's transactional effect exists exactly once, written by its
 *   succeeded execution in the batch its result names, and the result names
 *   that execution: a batch transaction that did not commit left nothing;
 * - the frozen worker's late batch completions were fenced job by job (see
 *   `FENCED` below);
 * - batches really formed: sizes above 1, none above maxSize, each batch's
 *   attempts on one worker, each its own execution; a job of a batch failed
 *   its first attempt while the others of that batch succeeded;
 * - no deadlock, no problem in the worker logs.
 */
import { describe, expect, it } from "vitest";
import { BATCH_TRANSIENT, type ChaosBatchPayload } from "../fixtures/chaos-jobs.js";
import type { CliProcess } from "../worker-processes/process-helpers.js";
import { StopWaiting, waitFor } from "../helpers/wait-for.js";
import {
  between,
  type ChaosRun,
  DATABASE_FENCE,
  deadlocks,
  fencesLogged,
  freezeUntilReclaimed,
  LOCAL_FENCE,
  notSucceededOnce,
  onDedicatedServer,
  sleep,
  summary,
  violations,
} from "./harness.js";

const JOBS = 4_000;
const WORKERS = 4;
/** chaos.batch's batch.maxSize (test/fixtures/chaos-jobs.js). */
const MAX_SIZE = 20;
const LEASE_MS = 3_000;
// Concurrency 40, twice maxSize: a worker runs one batch while it gathers the next.
const ARGS = ["--concurrency", "40", "--lease-ms", String(LEASE_MS), "--heartbeat-ms", "750", "--reclaim-interval-ms", "500", "--poll-interval-ms", "100"];
const DOWN_MS = 1_000;
/** Everything must have succeeded this long after the enqueue. */
const DRAIN_BOUND_MS = 60_000;
/** The frozen worker stays frozen until its attempts are reclaimed, or this long at most (see `freeze`). */
const FREEZE_MAX_MS = 8_000;
const ROLLED_BACK = "the batch's transaction was rolled back";

/**
 * A batch of worker `pid` mid-way: its side effects made (ledger rows), two
 * jobs or more still running on it (not committed): its handler sits in the
 * batch's transaction, or is about to open it.
 */
async function batchMidway(r: ChaosRun, pid: number): Promise<{ batch_id: string; executions: string[] } | null> {
  const [row] = await r.q<{ batch_id: string; executions: string[] }>(
    `SELECT m.batch_id, array_agg(m.execution_id) AS executions
       FROM ${r.s}.job_batch_members AS m
       JOIN ${r.s}.jobs AS j ON j.id = m.job_id AND j.current_execution_id = m.execution_id
      WHERE j.locked_by LIKE '%-' || $1::text || '-%'
        AND EXISTS (SELECT 1 FROM ${r.s}.chaos_ledger AS l WHERE l.batch_id = m.batch_id)
      GROUP BY m.batch_id HAVING count(*) >= 2
      LIMIT 1`,
    [pid],
  );
  return row ?? null;
}

/** Rows of `text` (at most 10 shown) as one violation each, for expect(...).toEqual([]). */

describe("chaos: batch handlers under SIGKILL, SIGSTOP and a PostgreSQL crash", () => {
  it(`settles ${JOBS} batched jobs once each, their transactional effects once, fencing a frozen worker's batches job by job`, async () => {
    await onDedicatedServer("batch", async (r, server) => {
      const s = r.s;
      const pool: Array<CliProcess | null> = Array.from({ length: WORKERS }, () => r.spawn(ARGS));
      await Promise.all(pool.map((w) => w!.ready()));
      const alive = () => pool.filter((w): w is CliProcess => w !== null);
      const mustLive = () => {
        for (const w of alive()) if (!w.alive) throw new StopWaiting(`worker ${w.pid} exited: ${JSON.stringify(w.exit)}\n${w.output()}`);
      };
      /** A batch of worker `index` mid-way (batchMidway), once there is one. */
      const midway = (index: number) => {
        const w = pool[index]!;
        return waitFor(
          `worker ${w.pid} to be mid-way through a batch`,
          async () => {
            mustLive();
            return batchMidway(r, w.pid);
          },
          20_000,
          5,
        );
      };

      await r.enqueue(
        Array.from({ length: JOBS }, () => ({
          job: "chaos.batch" as const,
          payload: { holdMs: between(50, 200), txHoldMs: between(100, 300) } satisfies ChaosBatchPayload,
        })),
      );
      const enqueuedAt = Date.now();
      r.startLeaseMonitor();

      const killed: Array<{ pid: number; executions: string[] }> = [];
      const replacements: Promise<void>[] = [];
      let frozen = null as { pid: number; batchId: string; batch: string[]; executions: string[]; frozenMs: number } | null;
      let outage = "";

      const kill = async (index: number) => {
        const victim = pool[index]!;
        const batch = await midway(index);
        pool[index] = null;
        victim.signal("SIGKILL");
        await victim.waitForExit(10_000);
        killed.push({ pid: victim.pid, executions: batch.executions });
        replacements.push(
          (async () => {
            await sleep(between(0, 500));
            const replacement = r.spawn(ARGS);
            await replacement.ready();
            pool[index] = replacement;
          })(),
        );
      };
      /**
       * Freeze worker `index` while one of its batches is mid-way, until the others
       * reclaimed every attempt it held (at least a lease). A batch frozen between
       * its completion statement and its COMMIT keeps its job rows locked, and the
       * sweep skips locked rows: the freeze then ends after FREEZE_MAX_MS, and that
       * batch commits on waking, as the lock entitles it to.
       */
      const freeze = async (index: number) => {
        const victim = pool[index]!;
        const batch = await midway(index);
        const { executions: open, frozenMs } = await freezeUntilReclaimed(r, victim, LEASE_MS, FREEZE_MAX_MS);
        frozen = { pid: victim.pid, batchId: batch.batch_id, batch: batch.executions, executions: open, frozenMs };
      };
      /** Crash PostgreSQL (immediate: every backend killed, crash recovery) while a batch of worker `index` is mid-way. */
      const crash = async (index: number) => {
        await midway(index);
        const downAt = Date.now();
        await server.restartAfter("immediate", DOWN_MS);
        outage = `${((Date.now() - downAt) / 1000).toFixed(1)} s`;
        for (const w of alive()) expect(w.alive, w.output()).toBe(true);
      };

      const faults = (async () => {
        await kill(0);
        await freeze(1);
        await crash(2);
      })();
      try {
        await faults;
        expect((await r.statusCounts()).succeeded ?? 0, "work left after the last fault").toBeLessThan(JOBS);
        await Promise.all(replacements);
        const drainSeconds = await r.drained(DRAIN_BOUND_MS, enqueuedAt, alive);
        const maxOverdueMs = await r.stopLeaseMonitor();

        // FENCED. The frozen worker was stopped with a batch mid-way: effect rows written in its open
        // transaction, no job row locked yet (the completion statement comes last), so the sweep reclaims
        // its jobs and others run them. On waking, the handler returns its outcomes (it ignores every
        // signal inside the transaction) and the transaction must refuse them: the jobs' deadlines passed,
        // so it rolls back with LeaseLostError before sending the completion (or the completion, fenced
        // on each execution id, matches none of them and it rolls back just the same). Each of its
        // reclaimed attempts then ends with a fence line naming the execution: its lease keeper abandoned
        // it ("lease lost"), or the database refused its failure ("outcome not recorded"). An effect row
        // commits only with its execution's completion, so an effect row of a lease_expired attempt, or a
        // job whose result names another execution than its succeeded one, would be a late completion let
        // through: checked below for every job, the frozen worker's included. Its ledger rows, made
        // outside the transaction before the freeze, stay: duplicates after a lease expiry, by design.
        const f = frozen!;
        const frozenWorker = r.workers.find((w) => w.pid === f.pid)!;
        const reclaimed = await r.q<{ id: string }>(
          `SELECT id FROM ${s}.job_attempts WHERE id = ANY($1::uuid[]) AND outcome = 'lease_expired'`,
          [f.executions],
        );
        const fenced = await fencesLogged(frozenWorker, reclaimed);
        await r.stopWorkers();
        for (const w of alive()) expect(w.exit, w.output()).toEqual({ code: 0, signal: null });

        const verdict = await r.judge({ allowDuplicates: ["after_lease_expiry", "late_stale_owner", "after_failure"] });
        const problems: string[] = [];
        // Every job succeeded, once.
        problems.push(...(await notSucceededOnce(r)));
        // Each transactional effect once per job, by its succeeded execution, in the batch its result names;
        // the result names that execution. None of an attempt that did not succeed (FENCED).
        problems.push(
          ...(await violations(
            r,
            "jobs without exactly one effect, by their succeeded execution, in the batch and execution their result names",
            `SELECT j.id, count(fx.id)::int AS effects, array_agg(fx.execution_id) AS by, e.id AS succeeded, j.result
               FROM ${s}.jobs AS j
               LEFT JOIN ${s}.job_attempts AS e ON e.job_id = j.id AND e.outcome = 'succeeded'
               LEFT JOIN ${s}.chaos_batch_effects AS fx ON fx.job_id = j.id
              GROUP BY j.id, e.id, j.result
             HAVING count(fx.id) <> 1
                 OR bool_or(fx.execution_id IS DISTINCT FROM e.id)
                 OR bool_or(fx.batch_id::text IS DISTINCT FROM j.result ->> 'batchId')
                 OR j.result ->> 'executionId' IS DISTINCT FROM e.id::text`,
          )),
          ...(await violations(
            r,
            "effects of an attempt that did not succeed, or of no job",
            `SELECT fx.job_id, fx.execution_id, fx.pid, e.outcome FROM ${s}.chaos_batch_effects AS fx
               LEFT JOIN ${s}.job_attempts AS e ON e.id = fx.execution_id AND e.job_id = fx.job_id
              WHERE e.outcome IS DISTINCT FROM 'succeeded'`,
          )),
          // The ledger row of a succeeded job's execution was made in the batch that committed it.
          ...(await violations(
            r,
            "succeeded executions whose ledger row names another batch than their effect",
            `SELECT fx.job_id, fx.execution_id, fx.batch_id, l.batch_id AS ledger_batch
               FROM ${s}.chaos_batch_effects AS fx
               JOIN ${s}.chaos_ledger AS l ON l.execution_id = fx.execution_id AND l.event = 'effect'
              WHERE l.batch_id IS DISTINCT FROM fx.batch_id`,
          )),
        );
        // Batches as recorded (job_batch_members, written when a batch starts; a write lost in the crash
        // costs a batch its record only): none above maxSize, each with as many attempts as its recorded
        // size, each attempt its own execution, all on one worker; and the batches the handlers committed
        // (effect rows by batch) no larger.
        problems.push(
          ...(await violations(
            r,
            "batches larger than maxSize, or whose members differ from their size, share an execution or span workers",
            `SELECT m.batch_id, max(m.batch_size) AS size, count(*)::int AS members, count(DISTINCT m.execution_id)::int AS executions,
                    count(DISTINCT e.worker_id)::int AS workers
               FROM ${s}.job_batch_members AS m LEFT JOIN ${s}.job_attempts AS e ON e.id = m.execution_id
              GROUP BY m.batch_id
             HAVING max(m.batch_size) > $1 OR min(m.batch_size) <> max(m.batch_size) OR count(*) <> max(m.batch_size)
                 OR count(DISTINCT m.execution_id) <> count(*) OR count(DISTINCT e.worker_id) > 1`,
            [MAX_SIZE],
          )),
          ...(await violations(
            r,
            "committed batches larger than maxSize, or made by more than one process",
            `SELECT batch_id, count(*)::int AS n, count(DISTINCT pid)::int AS pids FROM ${s}.chaos_batch_effects
              GROUP BY batch_id HAVING count(*) > $1 OR count(DISTINCT pid) > 1`,
            [MAX_SIZE],
          )),
        );
        // Per-job outcomes: the jobs whose id ends in "0" never succeeded on their first attempt, and only
        // they failed with the fixture's transient error, on their first attempt, once.
        problems.push(
          ...(await violations(
            r,
            "first attempts that should have failed but succeeded",
            `SELECT e.job_id, e.id FROM ${s}.job_attempts AS e
              WHERE right(e.job_id::text, 1) = '0' AND e.attempt = 1 AND e.outcome = 'succeeded'`,
          )),
          ...(await violations(
            r,
            "transient failures of a job or an attempt the fixture does not fail",
            `SELECT e.job_id, e.attempt, e.outcome FROM ${s}.job_attempts AS e
              WHERE e.error ->> 'message' = $1 AND (right(e.job_id::text, 1) <> '0' OR e.attempt <> 1 OR e.outcome <> 'failed')`,
            [BATCH_TRANSIENT],
          )),
        );

        // FENCED, for the attempts taken from the frozen worker in particular: none of them completed, left
        // its result on the job, or committed an effect.
        problems.push(
          ...(await violations(
            r,
            "late completions of the frozen worker written",
            `SELECT j.id, j.result, e.id AS succeeded, fx.execution_id AS effect_by
               FROM ${s}.jobs AS j
               LEFT JOIN ${s}.job_attempts AS e ON e.job_id = j.id AND e.outcome = 'succeeded' AND e.id = ANY($1::uuid[])
               LEFT JOIN ${s}.chaos_batch_effects AS fx ON fx.job_id = j.id AND fx.execution_id = ANY($1::uuid[])
              WHERE e.id IS NOT NULL OR fx.id IS NOT NULL OR j.result ->> 'executionId' = ANY($1::text[])`,
            [reclaimed.map((e) => e.id)],
          )),
        );

        const [batches] = await r.q<{ n: number; multi: number; largest: number; mean: number; in_multi: number; recorded: number; mixed: number }>(
          `WITH b AS (SELECT batch_id, max(batch_size) AS size FROM ${s}.job_batch_members GROUP BY batch_id)
           SELECT count(*)::int AS n, count(*) FILTER (WHERE size > 1)::int AS multi, max(size)::int AS largest,
                  round(avg(size), 1)::float8 AS mean, coalesce(sum(size) FILTER (WHERE size > 1), 0)::int AS in_multi,
                  (SELECT count(*)::int FROM ${s}.job_batch_members) AS recorded,
                  (SELECT count(*)::int FROM (
                     SELECT m.batch_id FROM ${s}.job_batch_members AS m JOIN ${s}.job_attempts AS e ON e.id = m.execution_id
                      GROUP BY m.batch_id
                     HAVING bool_or(e.outcome = 'succeeded') AND bool_or(e.error ->> 'message' = $1)) AS x) AS mixed
             FROM b`,
          [BATCH_TRANSIENT],
        );
        const [transient] = await r.q<{ n: number }>(`SELECT count(*)::int AS n FROM ${s}.job_attempts WHERE error ->> 'message' = $1`, [BATCH_TRANSIENT]);
        const killedReclaimed = await r.q<{ id: string }>(
          `SELECT id FROM ${s}.job_attempts WHERE id = ANY($1::uuid[]) AND outcome = 'lease_expired'`,
          [killed.flatMap((k) => k.executions)],
        );
        const [late] = await r.q<{ ledger: number; effects: number }>(
          `SELECT (SELECT count(*)::int FROM ${s}.chaos_ledger WHERE execution_id = ANY($1::uuid[]) AND event = 'effect' AND NOT owner_current) AS ledger,
                  (SELECT count(*)::int FROM ${s}.chaos_batch_effects WHERE execution_id = ANY($1::uuid[])) AS effects`,
          [reclaimed.map((e) => e.id)],
        );
        const midwayReclaimed = reclaimed.filter((e) => f.batch.includes(e.id)).length;
        const frozenRollbacks = frozenWorker.stdout.split("\n").filter((line) => line.includes(ROLLED_BACK)).length;
        const localFences = fenced.filter((line) => line.msg === LOCAL_FENCE && reclaimed.some((e) => e.id === line.executionId)).length;
        const deadlockLines = server.grep(/deadlock detected/i, 8);
        summary(
          "batch",
          verdict,
          `${killed.length} SIGKILL mid-batch, 1 SIGSTOP of ${(f.frozenMs / 1000).toFixed(1)} s (lease ${LEASE_MS / 1000} s), 1 crash (immediate restart, ${outage})`,
          drainSeconds,
          `${batches!.n} batches recorded (${batches!.multi} of 2 jobs or more, mean ${batches!.mean}, largest ${batches!.largest}), ` +
            `${transient!.n} transient per-job failures (${batches!.mixed} batches settled mixed); ` +
            `killed batch: ${killedReclaimed.length} attempts reclaimed; frozen worker: ${reclaimed.length} attempts taken ` +
            `(${midwayReclaimed} of its mid-way batch), ${localFences} abandoned on waking, ${reclaimed.length - localFences} refused by the database, ` +
            `${frozenRollbacks} batch rollbacks logged, ${late!.ledger} late ledger rows, ${late!.effects} effects committed; ` +
            `longest overdue lease ${(maxOverdueMs / 1000).toFixed(1)} s`,
        );

        expect(verdict.violations).toEqual([]);
        expect(problems).toEqual([]);
        expect(verdict.statuses).toEqual({ succeeded: JOBS });
        expect(r.logProblems()).toEqual([]);
        expect(deadlockLines).toEqual([]);
        expect(await deadlocks(r.databaseUrl), "deadlocks PostgreSQL counted in this scenario's database").toBe(0);
        // Batches really formed, and per-job outcomes within one.
        expect(batches!.largest).toBeLessThanOrEqual(MAX_SIZE);
        expect(batches!.multi).toBeGreaterThan(0);
        expect(batches!.in_multi / batches!.recorded, "attempts recorded in batches of 2 jobs or more").toBeGreaterThan(0.5);
        expect(transient!.n).toBeGreaterThan(0);
        expect(batches!.mixed, "batches in which a job failed and another succeeded").toBeGreaterThan(0);
        // The faults really happened where they should.
        expect(killed).toHaveLength(1);
        expect(killedReclaimed.length, "attempts of the batch working when its worker was killed, reclaimed").toBeGreaterThan(0);
        expect(f.frozenMs).toBeGreaterThan(LEASE_MS);
        expect(midwayReclaimed, "attempts of the batch frozen mid-way taken from the frozen worker").toBeGreaterThanOrEqual(2);
        // As the API shows it: a job of the mid-way batch lists the attempt taken from the frozen worker, in that batch.
        const taken = reclaimed.find((e) => f.batch.includes(e.id))!.id;
        const [shown] = await r.q<{ job_id: string; size: number }>(
          `SELECT job_id, batch_size AS size FROM ${s}.job_batch_members WHERE batch_id = $1 AND execution_id = $2`,
          [f.batchId, taken],
        );
        expect(shown!.size).toBeGreaterThan(1);
        const job = await r.conveyor.getJob(shown!.job_id);
        expect(job!.executions.find((e) => e.id === taken)).toMatchObject({ outcome: "lease_expired", batch: { id: f.batchId, size: shown!.size } });
        expect(verdict.duplicatesByClass.after_lease_expiry ?? 0, "side effects of the killed and frozen batches made again").toBeGreaterThan(0);
        expect(late!.effects).toBe(0);
        expect(verdict.outcomes.lease_expired ?? 0).toBeGreaterThan(0);
        expect(maxOverdueMs).toBeLessThan(15_000);
      } finally {
        await Promise.allSettled([faults, ...replacements]);
      }
    });
  }, 180_000);
});
