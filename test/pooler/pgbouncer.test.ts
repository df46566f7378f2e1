/**
 * Everything through a real PgBouncer (Debian's 1.18, no protocol-level
 * prepared statements) in transaction mode, with a server pool smaller than
 * the clients' connections so that they share server connections: anything
 * that relied on a session (a named prepared statement, a SET, a session
 * lock) would break here.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { ConfigError, Conveyor, defineJob, type Worker } from "../../packages/core/src/index.js";
import { workerTestSignals } from "../../packages/core/src/worker/test-signals.js";
import { buildApp } from "../../packages/http/src/index.js";
import { createTestConveyor, testDatabaseUrl, type TestConveyor } from "../helpers/database.js";
import { type PgBouncer, startPgBouncer } from "../helpers/pgbouncer.js";
import { uniqueSchemaName } from "../helpers/test-schemas.js";
import { silent, sql } from "../worker/support.js";
import { waitFor } from "../helpers/wait-for.js";

const ran = new Set<string>();
const work = defineJob({
  kind: "pooled.work",
  schema: z.object({ n: z.number() }),
  handler: async ({ job }) => {
    ran.add(job.id);
    return { ok: true };
  },
});
const ticks: string[] = [];
const tick = defineJob({
  kind: "pooled.tick",
  schema: z.object({}),
  cron: { name: "pooled-every-second", cron: "* * * * * *", missed: { policy: "skip" } },
  handler: ({ job }) => {
    ticks.push(job.id);
  },
});

describe("through PgBouncer in transaction mode", () => {
  let bouncer: PgBouncer;
  let test: TestConveyor;
  let conveyor: Conveyor;
  const workers: Worker[] = [];
  beforeAll(async () => {
    bouncer = await startPgBouncer(testDatabaseUrl(), 3);
    test = await createTestConveyor({ connectionString: bouncer.url, pooler: "transaction", jobs: [work], logger: silent, poolSize: 8 });
    conveyor = test.conveyor;
  }, 120_000);
  afterAll(async () => {
    await Promise.all(workers.map((worker) => worker.stop({ graceMs: 0 })));
    await test?.cleanup();
    await bouncer?.stop();
  });

  const done = (ids: readonly string[]) =>
    waitFor(`${ids.length} jobs to succeed`, async () => {
      const { rows } = await sql(conveyor, "SELECT count(*)::int AS n FROM {{schema}}.jobs WHERE id = ANY($1::uuid[]) AND status = 'succeeded'", [ids]);
      return rows[0].n === ids.length;
    }, 60_000);

  it("refuses a pooler setting it does not know, and a LISTEN URL without a pooler", () => {
    expect(() => new Conveyor({ connectionString: bouncer.url, pooler: "session" as never })).toThrow(ConfigError);
    expect(() => new Conveyor({ connectionString: bouncer.url, pooler: "session" as never })).toThrow('pooler must be "none" or "transaction", got "session"');
    expect(() => new Conveyor({ connectionString: bouncer.url, listenConnectionString: testDatabaseUrl() })).toThrow(/listenConnectionString is for pooler/);
  });

  it("migrates a fresh schema from four clients at once", async () => {
    const schema = uniqueSchemaName();
    const clients = [1, 2, 3, 4].map(() => new Conveyor({ connectionString: bouncer.url, pooler: "transaction", schema, logger: silent, poolSize: 2 }));
    try {
      const results = await Promise.all(clients.map((client) => client.migrate()));
      expect(results.filter((result) => result.applied.length > 0)).toHaveLength(1);
      const status = await clients[0]!.schemaStatus();
      expect(status.current).toBe(status.latest);
    } finally {
      await clients[0]!.pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await Promise.all(clients.map((client) => client.close()));
    }
  }, 60_000);

  it("enqueues one at a time, in batches, by COPY and as a flow, and workers polling run them all", async () => {
    const worker = conveyor.worker({ concurrency: 8, pollIntervalMs: 50, logger: silent });
    workers.push(worker);
    await worker.start();
    const singles = await Promise.all(Array.from({ length: 200 }, (_, n) => conveyor.enqueue(work, { n })));
    const batch = await conveyor.enqueueMany(Array.from({ length: 500 }, (_, n) => ({ job: work, payload: { n } })));
    const copied = await conveyor.enqueueMany(Array.from({ length: 3_000 }, (_, n) => ({ job: work, payload: { n } })));
    const flow = await conveyor.flows.enqueue({
      jobs: { a: { job: work, payload: { n: 1 } }, b: { job: work, payload: { n: 2 } }, c: { job: work, payload: { n: 3 }, dependsOn: ["a", "b"] } },
    });
    await done([...singles, ...batch, ...copied, ...Object.values(flow.jobs)].map((job) => job.id));
    const { rows } = await sql(conveyor, "SELECT count(*)::int AS n FROM {{schema}}.job_attempts WHERE outcome = 'succeeded'");
    expect(rows[0].n).toBe(3_703);
    await worker.stop();
    workers.pop();
  }, 120_000);

  it("wakes workers through LISTEN on a direct URL", async () => {
    const listening = new Conveyor({
      connectionString: bouncer.url,
      pooler: "transaction",
      listenConnectionString: testDatabaseUrl(),
      schema: test.schema,
      jobs: [work],
      logger: silent,
    });
    const worker = listening.worker({ concurrency: 2, pollIntervalMs: 120_000, logger: silent });
    const signals = workerTestSignals(worker).worker;
    try {
      await worker.start();
      // Its first poll has passed and it sleeps with no wake-up pending: only a notification can wake it within the wait below.
      await signals.idle.wait();
      const job = await conveyor.enqueue(work, { n: 42 });
      await waitFor("the woken worker to run it", () => ran.has(job.id), 5_000);
    } finally {
      await worker.stop({ graceMs: 0 });
      await listening.close();
    }
  }, 60_000);

  it("enqueues every cron tick once", async () => {
    const cron = new Conveyor({ connectionString: bouncer.url, pooler: "transaction", schema: test.schema, jobs: [tick], logger: silent });
    const ticking = [cron.worker({ pollIntervalMs: 50, logger: silent }), cron.worker({ pollIntervalMs: 50, logger: silent })];
    try {
      await Promise.all(ticking.map((worker) => worker.start()));
      await waitFor("three ticks to run", () => ticks.length >= 3, 20_000);
    } finally {
      await Promise.all(ticking.map((worker) => worker.stop({ graceMs: 0 })));
      await cron.close();
    }
    const { rows } = await sql(
      conveyor,
      "SELECT idempotency_key, count(*)::int AS n FROM {{schema}}.jobs WHERE kind = 'pooled.tick' GROUP BY 1 HAVING count(*) > 1",
    );
    expect(rows).toEqual([]);
  }, 60_000);

  it("bounds searches in transactions of their own: the bound fires, and never stays on a shared server connection", async () => {
    const bounded = new Conveyor({ connectionString: bouncer.url, pooler: "transaction", schema: test.schema, logger: silent, poolSize: 6, searchTimeoutMs: 300 });
    const direct = new Conveyor({ connectionString: testDatabaseUrl(), schema: test.schema, logger: silent, poolSize: 1 });
    const locker = await direct.pool.connect();
    try {
      // Many bounded reads at once over 3 server connections.
      const reads = await Promise.all(
        Array.from({ length: 12 }, (_, i) =>
          i % 3 === 0 ? bounded.listJobs({ status: "succeeded", limit: 5 }) : i % 3 === 1 ? bounded.countJobs({ kind: "pooled.work" }) : bounded.overview(),
        ),
      );
      expect(reads).toHaveLength(12);
      await locker.query("BEGIN");
      await locker.query(`LOCK TABLE "${test.schema}".jobs IN ACCESS EXCLUSIVE MODE`);
      await expect(bounded.listJobs({ error: "anything" })).rejects.toMatchObject({ code: "SEARCH_TIMEOUT", timeoutMs: 300 });
      await locker.query("COMMIT");
      // Every server connection the pooler hands out still has the server's own statement_timeout.
      const settings = await Promise.all(Array.from({ length: 6 }, () => bounded.pool.query("SELECT current_setting('statement_timeout') AS value, pg_sleep(0.4)")));
      expect(new Set(settings.map(({ rows }) => rows[0].value))).toEqual(new Set(["0"]));
    } finally {
      await locker.query("ROLLBACK").catch(() => {});
      locker.release();
      await direct.close();
      await bounded.close();
    }
  });

  it("serves the HTTP API and the dashboard's reads", async () => {
    const keys = conveyor.apiKeys;
    const { key } = await keys.create({ admin: true, name: "pooled" });
    const app = await buildApp(conveyor, { logger: silent });
    try {
      const headers = { authorization: `Bearer ${key}` };
      const created = await app.inject({ method: "POST", url: "/v1/jobs", headers, payload: { kind: "pooled.work", payload: { n: 7 } } });
      expect(created.statusCode, created.body).toBe(201);
      const id = JSON.parse(created.body).id as string;
      for (const url of [`/v1/jobs/${id}`, "/v1/jobs?limit=5", "/v1/jobs/count?queue=default", "/v1/queues", "/v1/overview", "/v1/workers", "/v1/stats/throughput", "/readyz"]) {
        const response = await app.inject({ url, headers });
        expect(response.statusCode, `${url}: ${response.body}`).toBe(200);
      }
      const page = await app.inject({ url: "/" });
      expect(page.statusCode).toBe(200);
    } finally {
      await app.close();
    }
  });
});
