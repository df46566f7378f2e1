/**
 * Scenario: the primary crashes and its synchronous standby is promoted
 * while workers run jobs and the HTTP API and the library take enqueues,
 * all through one URL listing both hosts. Conveyor must follow the new
 * primary without a restart: every enqueue that was answered (a resolved
 * promise, a 201) exists afterwards, no job succeeds twice, nothing stays
 * running past its lease, and work resumes within the stated bound. Before
 * the failover, the standby also serves as a read replica: pages read there,
 * every write goes to the primary.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pino from "pino";
import { z } from "zod";
import { Conveyor, defineJob, type Worker } from "../../packages/core/src/index.js";
import { buildApp, type ConveyorApp } from "../../packages/http/src/index.js";
import { debianPostgresBin, ReplicaPair } from "../helpers/replica-pair.js";
import { sleep } from "./harness.js";

const silent = pino({ level: "silent" });
const LEASE_MS = 3_000;
/** From the promotion to the first job completed on the new primary. */
const RESUME_BOUND_MS = 20_000;

const work = defineJob({ kind: "failover.work", schema: z.object({ n: z.number() }), maxAttempts: 10, handler: async () => {
  await sleep(5);
  return { ok: true };
} });

const bin = debianPostgresBin();

describe.skipIf(bin === null)("chaos: failover to a synchronous standby", () => {
  let pair: ReplicaPair;
  let conveyor: Conveyor;
  let app: ConveyorApp;
  let key: string;
  const workers: Worker[] = [];
  beforeAll(async () => {
    pair = await new ReplicaPair(bin!).start();
    conveyor = new Conveyor({ connectionString: pair.hostListUrl, jobs: [work], logger: silent, queryTimeoutMs: 10_000 });
    await conveyor.migrate();
    key = (await conveyor.apiKeys.create({ admin: true, name: "failover" })).key;
    app = await buildApp(conveyor, { logger: silent });
  }, 120_000);
  afterAll(async () => {
    await Promise.allSettled(workers.map((worker) => worker.stop({ graceMs: 0 })));
    await app?.close();
    await conveyor?.close();
    await pair?.cleanup();
  }, 60_000);

  it("reads pages from the standby as a read replica, and writes only to the primary", async () => {
    const replicaClient = new Conveyor({
      connectionString: pair.url(pair.primaryPort),
      readConnectionString: pair.url(pair.standbyPort),
      jobs: [work],
      logger: silent,
    });
    try {
      const job = await replicaClient.enqueue(work, { n: -1 }, { delayMs: 3_600_000 });
      // Synchronous replication: committed on the primary means flushed on the standby; applied soon after.
      const seen = async () => (await replicaClient.getJob(job.id)) !== null;
      const deadline = Date.now() + 5_000;
      while (!(await seen())) {
        if (Date.now() > deadline) throw new Error("the standby never showed the job");
        await sleep(20);
      }
      expect((await replicaClient.listJobs({ kind: "failover.work" })).items.map((j) => j.id)).toContain(job.id);
      const standby = new Conveyor({ connectionString: pair.url(pair.standbyPort), logger: silent });
      try {
        const { rows } = await standby.pool.query("SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'conveyor-reads'");
        expect(rows[0].n).toBeGreaterThan(0);
        const { rows: recovery } = await standby.pool.query("SELECT pg_is_in_recovery() AS r");
        expect(recovery[0].r).toBe(true); // so any write sent there would have failed
      } finally {
        await standby.close();
      }
      // The writes of the same client went to the primary.
      expect((await replicaClient.cancel(job.id)).outcome).toBe("cancelled");
    } finally {
      await replicaClient.close();
    }
  });

  it("follows the promoted standby: nothing answered is lost, nothing succeeds twice", async () => {
    for (let i = 0; i < 2; i++) {
      const worker = conveyor.worker({ concurrency: 8, leaseMs: LEASE_MS, heartbeatMs: 500, reclaimIntervalMs: 500, pollIntervalMs: 100, logger: silent });
      workers.push(worker);
      await worker.start();
    }
    const answered = new Set<string>();
    let refused = 0;
    let stop = false;
    let n = 0;
    const library = (async () => {
      while (!stop) {
        try {
          answered.add((await conveyor.enqueue(work, { n: n++ })).id);
        } catch {
          refused += 1;
          await sleep(50);
        }
      }
    })();
    const http = (async () => {
      while (!stop) {
        const response = await app.inject({
          method: "POST",
          url: "/v1/jobs",
          headers: { authorization: `Bearer ${key}` },
          payload: { kind: "failover.work", payload: { n: n++ } },
        });
        if (response.statusCode === 201) answered.add(JSON.parse(response.body).id);
        else {
          refused += 1;
          await sleep(50);
        }
      }
    })();
    await sleep(3_000);
    const beforeFailover = answered.size;
    await pair.crashPrimary();
    pair.promoteStandby();
    const promotedAt = Date.now();
    // Work resumes on the new primary: a job enqueued after the promotion completes.
    let resumedMs = -1;
    while (Date.now() - promotedAt < RESUME_BOUND_MS) {
      try {
        const probe = await conveyor.enqueue(work, { n: -2 });
        answered.add(probe.id);
        for (;;) {
          const job = await conveyor.getJob(probe.id);
          if (job?.status === "succeeded") break;
          if (Date.now() - promotedAt > RESUME_BOUND_MS) throw new Error("not run in time");
          await sleep(50);
        }
        resumedMs = Date.now() - promotedAt;
        break;
      } catch {
        await sleep(100);
      }
    }
    await sleep(2_000);
    stop = true;
    await Promise.all([library, http]);
    expect(resumedMs, "work resumed on the new primary").toBeGreaterThanOrEqual(0);
    expect(resumedMs).toBeLessThan(RESUME_BOUND_MS);

    // Everything answered exists and finishes on the new primary.
    const ids = [...answered];
    const deadline = Date.now() + 60_000;
    for (;;) {
      const { rows } = await conveyor.pool.query(
        `SELECT count(*)::int AS found, count(*) FILTER (WHERE status = 'succeeded')::int AS done FROM conveyor.jobs WHERE id = ANY($1::uuid[])`,
        [ids],
      );
      expect(rows[0].found, "every answered enqueue exists after the failover").toBe(ids.length);
      if (rows[0].done === ids.length) break;
      if (Date.now() > deadline) throw new Error(`${ids.length - rows[0].done} answered jobs never finished`);
      await sleep(200);
    }
    const { rows: twice } = await conveyor.pool.query(
      `SELECT job_id FROM conveyor.job_attempts WHERE outcome = 'succeeded' GROUP BY job_id HAVING count(*) > 1`,
    );
    expect(twice).toEqual([]);
    const { rows: overdue } = await conveyor.pool.query(
      `SELECT id FROM conveyor.jobs WHERE status = 'running' AND lease_expires_at < now() - interval '5 seconds'`,
    );
    expect(overdue).toEqual([]);
    console.log(
      `[chaos] failover: ${ids.length} answered enqueues (${beforeFailover} before the crash), ${refused} refused during it, ` +
        `all present and succeeded once; work resumed ${(resumedMs / 1000).toFixed(1)} s after the promotion`,
    );
  }, 180_000);
});
