/**
 * Scenario: durable execution under every fault at once. 1,000 jobs of
 * chaos.durable (test/fixtures/chaos-jobs.js) each run a plain step s1 (a
 * random number, also written to a ledger outside its record), a
 * transactional step s2 (a row written in the step's transaction), a sleep
 * of 50–500 ms, a wait for event `chaos.go` on their key, and a step s3
 * that records what the run saw of s1, s2 and the event. While they run,
 * sleep and wait, on four worker processes and a PostgreSQL server of the
 * test's own: a worker is frozen (SIGSTOP) past its lease while it holds
 * jobs with steps it recorded, then resumed; two workers are SIGKILLed and
 * replaced; PostgreSQL restarts fast, then immediate. The test sends the
 * events all along, retrying through the restarts: 150 right after the
 * enqueue (before their jobs reach the wait), the rest paced through the
 * faults, and the event of one key shared by 250 jobs once 40 of them sleep
 * on it (it must wake those at once, and the others find it on arrival).
 *
 * Judged afterwards on the tables:
 * - every job succeeded, with exactly one succeeded execution (and the
 *   shared judge's criteria);
 * - each job has exactly its five records, each once and finished, and
 *   s3's record and the job's result hold exactly the recorded s1, s2 and
 *   event; the recorded s1 is the value its recording execution's call
 *   wrote to the ledger, and every other call belongs to an execution that
 *   ended lease_expired or failed;
 * - s2's row exists once per job, written by the execution that recorded s2;
 * - no record or s2 row of an attempt that lost its lease committed after
 *   that attempt was reclaimed (commit timestamps, see `FENCE`); the frozen
 *   worker held steps in at least one reclaimed attempt, and logged a fence
 *   for each of them on waking;
 * - no job is left sleeping; exactly one event per key, received once by
 *   every job of its key (all 250 of the shared one), each seeing its
 *   payload;
 * - no problem in the worker logs, no deadlock.
 */
import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { ValidationError } from "../../packages/core/src/core/errors.js";
import type { ChaosDurablePayload } from "../fixtures/chaos-jobs.js";
import type { CliProcess } from "../worker-processes/process-helpers.js";
import { StopWaiting, waitFor } from "../helpers/wait-for.js";
import type { StopMode } from "./dedicated-postgres.js";
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

const JOBS = 1_000;
/** Jobs waiting on the one shared key. */
const SHARED = 250;
const SHARED_KEY = "shared";
/** The shared event is sent once this many of its jobs sleep on their wait. */
const SHARED_WAITING = 40;
/**
 * The fast restart comes once this many jobs sleep on their wait: bound to
 * happen, as the AFTER_FAULTS jobs whose events are held back until the
 * faults end all come to sleep there.
 */
const RESTART_WAITING = 40;
/** Solo keys whose event is sent right after the enqueue, before their jobs reach the wait. */
const EARLY = 150;
const EVENT = "chaos.go";
const WORKERS = 4;
const LEASE_MS = 3_000;
const ARGS = ["--concurrency", "8", "--lease-ms", String(LEASE_MS), "--heartbeat-ms", "750", "--reclaim-interval-ms", "500", "--poll-interval-ms", "100"];
const DOWN_MS = 1_000;
/** Everything must have succeeded this long after the enqueue. */
const DRAIN_BOUND_MS = 60_000;
/** The frozen worker stays frozen until its attempts are reclaimed, or this long at most (see `freeze`). */
const FREEZE_MAX_MS = 8_000;
/** The pause between two paced events. */
const PACE_MS = 15;
/** Paced events held back until every fault was injected, so the sends outlast the faults. */
const AFTER_FAULTS = 60;
const RECORDS = ["s1:step:completed", "s2:step:completed", "nap:sleep:awake", "go:wait:received", "s3:step:completed"];

interface SendStats {
  sent: number;
  /** Jobs sendEvent woke: each had a wait already sleeping on the event. */
  woke: number;
  /** Sends that failed (a restart) and were tried again. */
  retries: number;
  /** Sends that failed but had committed: found by their token, not sent again. */
  answersLost: number;
}

/**
 * Send the one event of `key`, exactly once, whatever the server does. A
 * send that fails may have committed with its answer lost; its payload
 * carries a token, which is looked for once the server answers again, and
 * the event is sent again only when it is not there. (Only restarts break
 * these sends: the failed send's backend is gone by the time the lookup
 * runs, so "not there" means "never committed".)
 */
async function sendOnce(r: ChaosRun, key: string, stats: SendStats): Promise<void> {
  const payload = { key, token: randomUUID() };
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      const sent = await r.conveyor.sendEvent({ event: EVENT, key, payload });
      stats.woke += sent.jobIds.length;
      stats.sent += 1;
      return;
    } catch (error) {
      if (error instanceof ValidationError || Date.now() > deadline) throw error;
      stats.retries += 1;
      const { found } = await waitFor(
        `the server to answer whether event ${key} was stored`,
        async () => ({ found: (await r.q(`SELECT 1 FROM ${r.s}.events WHERE payload->>'token' = $1`, [payload.token])).length > 0 }),
        30_000,
        100,
      );
      if (found) {
        stats.answersLost += 1;
        stats.sent += 1;
        return;
      }
    }
  }
}

/** `work` once the server answers (a restart may be under way). */
function retried<T>(work: () => Promise<T>): Promise<T> {
  return waitFor("the server to answer", async () => ({ value: await work() }), 30_000, 50).then(({ value }) => value);
}

/** Running attempts of worker `pid` that hold a step record they made themselves. */
async function holdingSteps(r: ChaosRun, pid: number): Promise<number> {
  const [row] = await r.q<{ n: number }>(
    `SELECT count(*)::int AS n FROM ${r.s}.job_attempts AS e
      WHERE e.outcome = 'running' AND e.worker_id LIKE '%-' || $1::text || '-%'
        AND EXISTS (SELECT 1 FROM ${r.s}.job_steps AS s WHERE s.job_id = e.job_id AND s.execution_id = e.id)`,
    [pid],
  );
  return row!.n;
}

async function runningOn(r: ChaosRun, pid: number): Promise<number> {
  const [row] = await r.q<{ n: number }>(
    `SELECT count(*)::int AS n FROM ${r.s}.job_attempts WHERE outcome = 'running' AND worker_id LIKE '%-' || $1::text || '-%'`,
    [pid],
  );
  return row!.n;
}

/** Rows of `text` (at most 10 shown) as one violation each, for expect(...).toEqual([]). */

describe("chaos: durable steps, sleeps and events under SIGKILL, SIGSTOP and PostgreSQL restarts", () => {
  it(`runs ${JOBS} durable jobs' steps once, wakes every sleeper and delivers every event once`, async () => {
    // track_commit_timestamp: the fence check compares commit times (see FENCE below).
    await onDedicatedServer(
      "durable",
      async (r, server) => {
        const s = r.s;
        const pool: Array<CliProcess | null> = Array.from({ length: WORKERS }, () => r.spawn(ARGS));
        await Promise.all(pool.map((w) => w!.ready()));
        const alive = () => pool.filter((w): w is CliProcess => w !== null);
        const mustLive = () => {
          for (const w of alive()) if (!w.alive) throw new StopWaiting(`worker ${w.pid} exited: ${JSON.stringify(w.exit)}\n${w.output()}`);
        };

        // Keys: SHARED jobs on one key, every other job a key of its own; shuffled, so the shared ones run throughout.
        const keys = Array.from({ length: JOBS }, (_, i) => (i < SHARED ? SHARED_KEY : `solo-${i}`));
        for (let i = keys.length - 1; i > 0; i--) {
          const j = between(0, i);
          [keys[i], keys[j]] = [keys[j]!, keys[i]!];
        }
        await r.enqueue(
          keys.map((key) => ({ job: "chaos.durable" as const, payload: { key, napMs: between(50, 500), holdMs: between(50, 300) } satisfies ChaosDurablePayload })),
        );
        const enqueuedAt = Date.now();
        r.startLeaseMonitor();

        const solo = keys.filter((key) => key !== SHARED_KEY);
        const early = solo.slice(0, EARLY);
        const paced = solo.slice(EARLY);
        const stats: SendStats = { sent: 0, woke: 0, retries: 0, answersLost: 0 };
        let faultsDone: () => void = () => {};
        const faultsOver = new Promise<void>((resolve) => {
          faultsDone = resolve;
        });
        let stop = false; // the test failed: send no more
        const sender = (async () => {
          for (const key of early) if (!stop) await sendOnce(r, key, stats);
          for (const [i, key] of paced.entries()) {
            if (i === paced.length - AFTER_FAULTS) await faultsOver;
            if (stop) return;
            await sendOnce(r, key, stats);
            await sleep(PACE_MS);
          }
        })();
        // The shared event once SHARED_WAITING of its jobs sleep on it: it must wake them all at once,
        // and the rest, still on their way, must find it when they reach the wait.
        const sharedSender = (async () => {
          await waitFor(
            `${SHARED_WAITING} jobs to wait for the shared event`,
            async () => {
              const [row] = await r.q<{ n: number }>(
                `SELECT count(*)::int AS n FROM ${s}.job_steps WHERE event = $1 AND event_key = $2 AND state = 'awaiting'`,
                [EVENT, SHARED_KEY],
              );
              return row!.n >= SHARED_WAITING || stop;
            },
            40_000,
            50,
          );
          if (!stop) await sendOnce(r, SHARED_KEY, stats);
        })();

        const outages: string[] = [];
        let kills = 0;
        let frozen = null as { pid: number; executions: string[]; frozenMs: number } | null;
        const replacements: Promise<void>[] = [];
        const kill = async (index: number) => {
          const victim = pool[index]!;
          await waitFor(
            `worker ${victim.pid} to hold jobs`,
            async () => {
              mustLive();
              return (await runningOn(r, victim.pid)) > 0;
            },
            20_000,
            10,
          );
          pool[index] = null;
          victim.signal("SIGKILL");
          await victim.waitForExit(10_000);
          kills += 1;
          replacements.push(
            (async () => {
              await sleep(between(0, 500));
              const replacement = r.spawn(ARGS);
              await replacement.ready();
              pool[index] = replacement;
            })(),
          );
        };
        const restart = async (mode: StopMode) => {
          const downAt = Date.now();
          await server.restartAfter(mode, DOWN_MS);
          outages.push(`${mode} ${((Date.now() - downAt) / 1000).toFixed(1)} s`);
          for (const w of alive()) expect(w.alive, w.output()).toBe(true);
        };
        /**
         * Freeze worker `index` once it holds three attempts with a step record
         * of their own, until the others reclaimed what it held (at least a lease).
         * A frozen attempt caught between a transactional step's record and
         * its COMMIT keeps the job row share-locked, and the sweep skips a
         * locked row: the freeze then ends after FREEZE_MAX_MS, and that
         * attempt commits on waking, as the lock entitles it to.
         */
        const freeze = async (index: number) => {
          const victim = pool[index]!;
          await waitFor(
            `worker ${victim.pid} to hold three jobs with a step it recorded`,
            async () => {
              mustLive();
              return (await holdingSteps(r, victim.pid)) >= 3;
            },
            20_000,
            5,
          );
          const { executions: open, frozenMs } = await freezeUntilReclaimed(r, victim, LEASE_MS, FREEZE_MAX_MS);
          frozen = { pid: victim.pid, executions: open, frozenMs };
        };
        /** Wait until `count` (a query returning n) reaches `least`, failing early if a worker died. */
        const when = (what: string, count: string, least: number, values: unknown[] = []) =>
          waitFor(
            what,
            async () => {
              mustLive();
              return ((await r.q<{ n: number }>(count, values))[0]?.n ?? 0) >= least;
            },
            30_000,
            50,
          );
        // Each fault in another phase of the jobs: first runs (steps), sleeps and waits, last runs.
        const faults = (async () => {
          try {
            await freeze(1);
            await kill(0);
            await when(
              `${RESTART_WAITING} jobs to sleep on their wait`,
              `SELECT count(*)::int AS n FROM ${s}.job_steps WHERE name = 'go' AND state = 'awaiting'`,
              RESTART_WAITING,
            );
            await restart("fast");
            const [{ n: ended }] = (await retried(() => r.q<{ n: number }>(`SELECT count(*)::int AS n FROM ${s}.job_attempts`))) as [{ n: number }];
            await when("50 attempts to end after the restart", `SELECT count(*)::int AS n FROM ${s}.job_attempts`, ended + 50);
            await kill(2);
            await when(`${JOBS * 0.3} jobs to succeed`, `SELECT count(*)::int AS n FROM ${s}.jobs WHERE status = 'succeeded'`, JOBS * 0.3);
            await restart("immediate");
          } finally {
            faultsDone();
          }
        })();

        try {
          await faults;
          await Promise.all([sender, sharedSender]);
          await Promise.all(replacements);
          const drainSeconds = await r.drained(DRAIN_BOUND_MS, enqueuedAt, alive);
          const maxOverdueMs = await r.stopLeaseMonitor();

          // The frozen worker logged a fence for each attempt taken from it (on waking: the lease keeper's
          // renewal or a fenced step, or the database refusing its outcome).
          const f = frozen!;
          const frozenWorker = r.workers.find((w) => w.pid === f.pid)!;
          const reclaimed = await r.q<{ id: string; holding: boolean }>(
            `SELECT e.id, EXISTS (SELECT 1 FROM ${s}.job_steps AS st WHERE st.execution_id = e.id) AS holding
               FROM ${s}.job_attempts AS e WHERE e.id = ANY($1::uuid[]) AND e.outcome = 'lease_expired'`,
            [f.executions],
          );
          const fenced = await fencesLogged(frozenWorker, reclaimed);
          await r.stopWorkers();
          for (const w of alive()) expect(w.exit, w.output()).toEqual({ code: 0, signal: null });

          const verdict = await r.judge({ allowDuplicates: ["after_lease_expiry", "late_stale_owner", "after_failure"] });
          const problems: string[] = [];
          // Every job succeeded, once.
          problems.push(...(await notSucceededOnce(r)));
          // Exactly its five records, each once (the key is (job_id, name)) and finished, in order.
          problems.push(
            ...(await violations(
              r,
              "jobs whose records are not s1, s2, nap, go, s3, each once and finished",
              `SELECT j.id, array_agg(st.name || ':' || st.kind || ':' || st.state ORDER BY st.seq) AS records, array_agg(st.seq ORDER BY st.seq) AS seqs
                 FROM ${s}.jobs AS j LEFT JOIN ${s}.job_steps AS st ON st.job_id = j.id
                GROUP BY j.id
               HAVING array_agg(st.name || ':' || st.kind || ':' || st.state ORDER BY st.seq) IS DISTINCT FROM $1::text[]
                   OR count(DISTINCT st.seq) <> 5`,
              [RECORDS],
            )),
          );
          // What s3 and the job's result saw is exactly what was recorded; s2 derived from the recorded s1.
          problems.push(
            ...(await violations(
              r,
              "jobs whose s3 or result differ from the recorded s1, s2 and event",
              `SELECT j.id, s1.result AS s1, s2.result AS s2, s3.result AS s3, go.result AS go, j.result
                 FROM ${s}.jobs AS j
                 JOIN ${s}.job_steps AS s1 ON s1.job_id = j.id AND s1.name = 's1'
                 JOIN ${s}.job_steps AS s2 ON s2.job_id = j.id AND s2.name = 's2'
                 JOIN ${s}.job_steps AS s3 ON s3.job_id = j.id AND s3.name = 's3'
                 JOIN ${s}.job_steps AS go ON go.job_id = j.id AND go.name = 'go'
                WHERE NOT (s2.result -> 'from' = s1.result -> 'value'
                       AND (s2.result ->> 'double')::float8 = (s1.result ->> 'value')::float8 * 2
                       AND s3.result = jsonb_build_object('s1', s1.result, 's2', s2.result, 'go', go.result)
                       AND j.result = jsonb_build_object('s1', s1.result, 's2', s2.result, 's3', s3.result, 'go', go.result))
                   OR go.result IS NULL`,
            )),
          );
          // s1 ran at least once: the recorded value is what the recording execution's call returned (its
          // ledger row), and a call whose result was not recorded belongs to an attempt that ended without
          // recording it (its lease lost, or failed in an outage), one call per attempt.
          problems.push(
            ...(await violations(
              r,
              "s1 records without the recording execution's call of that value",
              `SELECT st.job_id, st.execution_id, st.result FROM ${s}.job_steps AS st
                WHERE st.name = 's1' AND NOT EXISTS (
                  SELECT 1 FROM ${s}.chaos_step_calls AS c
                   WHERE c.job_id = st.job_id AND c.execution_id = st.execution_id AND c.value = (st.result ->> 'value')::float8)`,
            )),
            ...(await violations(
              r,
              "calls of s1 not recorded, by an attempt that did not end lease_expired or failed",
              `SELECT c.job_id, c.execution_id, e.outcome FROM ${s}.chaos_step_calls AS c
                 JOIN ${s}.job_steps AS st ON st.job_id = c.job_id AND st.name = 's1'
                 LEFT JOIN ${s}.job_attempts AS e ON e.id = c.execution_id
                WHERE c.execution_id <> st.execution_id AND (e.outcome IS NULL OR e.outcome NOT IN ('lease_expired', 'failed'))`,
            )),
            ...(await violations(
              r,
              "attempts that called s1 twice",
              `SELECT execution_id, count(*)::int AS n FROM ${s}.chaos_step_calls GROUP BY execution_id HAVING count(*) > 1`,
            )),
          );
          // The transactional step's effect: once per job, committed with the record (same execution).
          problems.push(
            ...(await violations(
              r,
              "jobs without exactly one s2 effect, by the execution that recorded s2",
              `SELECT j.id, count(fx.id)::int AS effects, array_agg(fx.execution_id) AS by, st.execution_id AS recorded_by
                 FROM ${s}.jobs AS j
                 LEFT JOIN ${s}.job_steps AS st ON st.job_id = j.id AND st.name = 's2'
                 LEFT JOIN ${s}.chaos_step_effects AS fx ON fx.job_id = j.id
                GROUP BY j.id, st.execution_id
               HAVING count(fx.id) <> 1 OR bool_or(fx.execution_id IS DISTINCT FROM st.execution_id)`,
            )),
            ...(await violations(
              r,
              "s2 effects of no job",
              `SELECT fx.* FROM ${s}.chaos_step_effects AS fx WHERE NOT EXISTS (SELECT 1 FROM ${s}.jobs AS j WHERE j.id = fx.job_id)`,
            )),
          );
          // FENCE. A record (or s2's effect) of an attempt that lost its lease is legitimate only if it
          // committed before the reclaim that ended the attempt: each write locks the job row matched on
          // its execution id (FOR SHARE; FOR UPDATE to suspend) until it commits, and the sweep locks the
          // row FOR UPDATE (skipping it while locked) and records the attempt's end (its job_executions
          // row) in the same transaction. So a fenced write commits before the reclaim's commit or not at
          // all; one committed after it is a late write the fence let through. Commit timestamps
          // (track_commit_timestamp) order the two commits as they happened, unlike the rows' now() (a
          // transaction's start: a transactional step's BEGIN may precede a reclaim its COMMIT follows).
          // A row changed later takes a new xmin, but none of those rows changes: sendEvent and the waker
          // change only the wait and sleep records of attempts that suspended, and a later attempt replaces
          // a step's 'failed' record together with its execution id.
          const [stamps] = await r.q<{ rows: number; unstamped: number; of_lost: number }>(
            `SELECT count(*)::int AS rows, count(*) FILTER (WHERE pg_xact_commit_timestamp(st.xmin) IS NULL)::int AS unstamped,
                    count(*) FILTER (WHERE x.outcome = 'lease_expired')::int AS of_lost
               FROM ${s}.job_steps AS st LEFT JOIN ${s}.job_attempts AS x ON x.id = st.execution_id`,
          );
          expect(stamps!.unstamped, "job_steps rows without a commit timestamp (track_commit_timestamp off?)").toBe(0);
          problems.push(
            ...(await violations(
              r,
              "records or effects of an attempt that lost its lease, committed after its reclaim",
              `SELECT 'record' AS what, st.job_id, st.name, st.execution_id,
                      pg_xact_commit_timestamp(st.xmin) AS committed, pg_xact_commit_timestamp(x.xmin) AS reclaimed
                 FROM ${s}.job_steps AS st JOIN ${s}.job_executions AS x ON x.id = st.execution_id
                WHERE x.outcome = 'lease_expired' AND pg_xact_commit_timestamp(st.xmin) >= pg_xact_commit_timestamp(x.xmin)
               UNION ALL
               SELECT 'effect', fx.job_id, 's2', fx.execution_id,
                      pg_xact_commit_timestamp(fx.xmin), pg_xact_commit_timestamp(x.xmin)
                 FROM ${s}.chaos_step_effects AS fx JOIN ${s}.job_executions AS x ON x.id = fx.execution_id
                WHERE x.outcome = 'lease_expired' AND pg_xact_commit_timestamp(fx.xmin) >= pg_xact_commit_timestamp(x.xmin)`,
            )),
          );
          // Events: one per key, each received once by every job of its key, and seen as sent.
          problems.push(
            ...(await violations(
              r,
              "keys without exactly one event",
              `SELECT k.key, count(e.id)::int AS events
                 FROM (SELECT DISTINCT payload ->> 'key' AS key FROM ${s}.jobs) AS k
                 LEFT JOIN ${s}.events AS e ON e.name = $1 AND e.event_key = k.key
                GROUP BY k.key HAVING count(e.id) <> 1`,
              [EVENT],
            )),
            ...(await violations(
              r,
              "waits that did not receive the event of their key",
              `SELECT j.id, j.payload ->> 'key' AS key, go.state, go.event_id, e.event_key, go.result, e.payload
                 FROM ${s}.jobs AS j
                 JOIN ${s}.job_steps AS go ON go.job_id = j.id AND go.name = 'go'
                 LEFT JOIN ${s}.events AS e ON e.id = go.event_id
                WHERE go.state <> 'received' OR e.id IS NULL OR e.name <> $1 OR e.event_key <> j.payload ->> 'key'
                   OR go.event <> $1 OR go.event_key <> j.payload ->> 'key' OR go.result IS DISTINCT FROM e.payload`,
              [EVENT],
            )),
            ...(await violations(
              r,
              "events not received exactly once by each job of their key",
              `SELECT * FROM (
                 SELECT e.event_key,
                        (SELECT count(*)::int FROM ${s}.job_steps AS st WHERE st.event_id = e.id) AS received,
                        (SELECT count(DISTINCT st.job_id)::int FROM ${s}.job_steps AS st WHERE st.event_id = e.id) AS jobs_received,
                        (SELECT count(*)::int FROM ${s}.jobs AS j WHERE j.payload ->> 'key' = e.event_key) AS jobs
                   FROM ${s}.events AS e) AS d
                WHERE received <> jobs OR jobs_received <> jobs`,
            )),
          );

          // How the waits met their events: received on reaching the wait (the wait's record made and
          // received in one transaction: started_at = finished_at), or delivered to a sleeping wait.
          const [ways] = await r.q<{ on_arrival: number; early_on_arrival: number; shared_on_arrival: number; shared_delivered: number }>(
            `SELECT count(*) FILTER (WHERE go.started_at = go.finished_at)::int AS on_arrival,
                    count(*) FILTER (WHERE go.started_at = go.finished_at AND go.event_key = ANY($1::text[]))::int AS early_on_arrival,
                    count(*) FILTER (WHERE go.started_at = go.finished_at AND go.event_key = $2)::int AS shared_on_arrival,
                    count(*) FILTER (WHERE go.started_at <> go.finished_at AND go.event_key = $2)::int AS shared_delivered
               FROM ${s}.job_steps AS go WHERE go.name = 'go'`,
            [early, SHARED_KEY],
          );
          const [calls] = await r.q<{ n: number }>(`SELECT count(*)::int AS n FROM ${s}.chaos_step_calls`);
          const deadlockLines = server.grep(/deadlock detected/i, 8);
          const held = reclaimed.filter((e) => e.holding).length;
          summary(
            "durable",
            verdict,
            `${kills} SIGKILLs, 1 SIGSTOP of ${(f.frozenMs / 1000).toFixed(1)} s (lease ${LEASE_MS / 1000} s), 2 restarts (${outages.join(", ")})`,
            drainSeconds,
            `${stats.sent} events (${ways!.on_arrival} waits found theirs on arrival, ${EARLY} sent early: ${ways!.early_on_arrival} so; ` +
              `${stats.woke} woken by sendEvent; the shared one reached ${ways!.shared_delivered} sleeping and ${ways!.shared_on_arrival} arriving), ` +
              `${stats.retries} sends retried (${stats.answersLost} had committed); s1 called ${calls!.n} times for ${JOBS} records; ` +
              `${reclaimed.length} attempts taken from the frozen worker (${held} holding steps, ${fenced.length} fence lines), ` +
              `${stamps!.of_lost} records of lost attempts; longest overdue lease ${(maxOverdueMs / 1000).toFixed(1)} s`,
          );

          expect(verdict.violations).toEqual([]);
          expect(problems).toEqual([]);
          expect(verdict.statuses).toEqual({ succeeded: JOBS });
          expect(r.logProblems()).toEqual([]);
          expect(deadlockLines).toEqual([]);
          expect(await deadlocks(r.databaseUrl), "deadlocks PostgreSQL counted in this scenario's database").toBe(0);
          // The faults really happened where they should.
          expect(kills).toBe(2);
          expect(f.frozenMs).toBeGreaterThan(LEASE_MS);
          expect(held, "attempts of the frozen worker that lost their lease holding steps").toBeGreaterThan(0);
          expect(stamps!.of_lost).toBeGreaterThan(0);
          expect(verdict.outcomes.lease_expired ?? 0).toBeGreaterThan(0);
          expect(stats.sent).toBe(JOBS - SHARED + 1);
          expect(ways!.on_arrival, "events sent before their job reached the wait").toBeGreaterThan(0);
          expect(stats.woke, "events delivered to a sleeping wait").toBeGreaterThan(0);
          expect(ways!.shared_delivered, "jobs the shared event woke at once").toBeGreaterThanOrEqual(SHARED_WAITING);
          expect(ways!.shared_on_arrival, "jobs that found the shared event on reaching their wait").toBeGreaterThan(0);
          expect(maxOverdueMs).toBeLessThan(15_000);
        } finally {
          stop = true;
          faultsDone();
          await Promise.allSettled([faults, sender, sharedSender, ...replacements]);
        }
      },
      { settings: { track_commit_timestamp: "on" } },
    );
  }, 180_000);
});
