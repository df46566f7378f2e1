import type pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { Conveyor, defineJob } from "../packages/core/src/index.js";
import { uuidv7 } from "../packages/core/src/core/ids.js";
import { bindQueries } from "../packages/core/src/store/queries.js";
import { connectTestClient, createTestConveyor, storeOf, type TestConveyor, testDatabaseUrl } from "./helpers/database.js";
import { emptyPayload, silent } from "./worker/support.js";

// Migration 009: an enqueue Conveyor commits itself, while another of its
// enqueues is in flight, sends its wake-up after the commit (no NOTIFY inside
// it, which would hold PostgreSQL's notify lock through the commit's fsync);
// an enqueue alone in flight, and an insert in a caller's transaction,
// notify at the commit (JobStore.inserting).
const mail = defineJob({ kind: "mail", queue: "mail", schema: emptyPayload, handler: () => {} });

describe("wake-ups after commit", () => {
  let t: TestConveyor;
  let listener: pg.Client;
  let heard: string[] = [];

  beforeAll(async () => {
    t = await createTestConveyor({ jobs: [mail], logger: silent });
    listener = await connectTestClient();
    listener.on("notification", (message) => heard.push(message.payload ?? ""));
    await listener.query(`LISTEN "${t.schema}:jobs"`);
  });

  afterEach(() => {
    heard = [];
  });

  afterAll(async () => {
    await listener?.end();
    await t?.cleanup();
  });

  /**
   * What was heard up to now: the client's pending wake-ups are sent, then a
   * marker on the same channel, and this waits for the marker. PostgreSQL
   * delivers notifications in the order their transactions committed, so
   * every wake-up committed before the marker has arrived before it. The
   * marker itself is left out.
   */
  async function heardUpToNow(): Promise<string[]> {
    await storeOf(t.conveyor).drainWakeUps();
    const marker = `marker-${uuidv7()}`;
    const arrived = new Promise<void>((resolve) => {
      const onMarker = (message: pg.Notification) => {
        if (message.payload !== marker) return;
        listener.off("notification", onMarker);
        resolve();
      };
      listener.on("notification", onMarker);
    });
    await t.conveyor.pool.query("SELECT pg_notify($1, $2)", [`${t.schema}:jobs`, marker]);
    await arrived;
    heard = heard.filter((payload) => payload !== marker);
    return heard;
  }

  it("enqueue and enqueueMany wake the job's queue once they have committed", async () => {
    await t.conveyor.enqueue(mail, {});
    expect(await heardUpToNow()).toEqual(["mail"]);
    heard = [];
    await t.conveyor.enqueueMany([{ job: mail, payload: {} }, { job: mail, payload: {}, queue: "other" }]);
    expect(new Set(await heardUpToNow())).toEqual(new Set(["mail", "other"]));
  });

  /** The statements sent on Conveyor's pool while `work` runs: each one's name and values. */
  type Sent = { name: string; values: unknown[] };
  async function statementsDuring(work: () => Promise<unknown>): Promise<Sent[]> {
    const pool = t.conveyor.pool as unknown as { query: (...args: unknown[]) => unknown };
    const original = pool.query;
    const sent: Sent[] = [];
    pool.query = function (this: unknown, ...args: unknown[]) {
      const config = args[0] as { name?: string; values?: unknown[] };
      if (typeof config === "object" && config.name) sent.push({ name: config.name, values: config.values ?? [] });
      return original.apply(this, args);
    };
    try {
      await work();
      await storeOf(t.conveyor).drainWakeUps();
    } finally {
      pool.query = original;
    }
    return sent;
  }
  /** Where the single insert takes its "wake after commit" flag ($11). */
  const WAKE_AFTER_COMMIT = 10;
  const named = (sent: Sent[], statement: "jobInsertKeyless" | "queuesWake") =>
    sent.filter(({ name }) => name === bindQueries(t.schema)[statement].name);

  it("an enqueue alone in flight notifies inside its commit, with no wake-up statement after it", async () => {
    const sent = await statementsDuring(() => t.conveyor.enqueue(mail, {}));
    expect(named(sent, "jobInsertKeyless").map((insert) => insert.values[WAKE_AFTER_COMMIT])).toEqual([false]);
    expect(named(sent, "queuesWake")).toEqual([]);
    expect(await heardUpToNow()).toEqual(["mail"]);
  });

  it("enqueues in flight together: one notifies inside its commit, the others wake their queues after theirs", async () => {
    const queues = ["q1", "q2", "q3", "q4", "q5", "q6"];
    const sent = await statementsDuring(() => Promise.all(queues.map((queue) => t.conveyor.enqueue(mail, {}, { queue }))));
    const flags = named(sent, "jobInsertKeyless").map((insert) => insert.values[WAKE_AFTER_COMMIT]);
    expect(flags).toHaveLength(queues.length);
    expect(flags.filter((afterCommit) => afterCommit === false)).toHaveLength(1);
    expect(named(sent, "queuesWake").length).toBeGreaterThan(0);
    expect(new Set(await heardUpToNow())).toEqual(new Set(queues));
  });

  it("a job not yet due wakes nobody", async () => {
    await t.conveyor.enqueue(mail, {}, { delayMs: 60_000 });
    expect(await heardUpToNow()).toEqual([]);
  });

  it("an enqueue in the caller's transaction notifies at the caller's commit, not before", async () => {
    const client = await connectTestClient();
    try {
      await client.query("BEGIN");
      await t.conveyor.enqueue(mail, {}, { tx: client });
      expect(await heardUpToNow()).toEqual([]);
      await client.query("COMMIT");
      expect(await heardUpToNow()).toEqual(["mail"]);
    } finally {
      await client.end();
    }
  });

  it("an enqueue in a transaction that rolls back wakes nobody", async () => {
    const client = await connectTestClient();
    try {
      await client.query("BEGIN");
      await t.conveyor.enqueue(mail, {}, { tx: client });
      await client.query("ROLLBACK");
      expect(await heardUpToNow()).toEqual([]);
    } finally {
      await client.end();
    }
  });

  it("an enqueue answered by an existing idempotency key wakes nobody", async () => {
    await t.conveyor.enqueue(mail, {}, { idempotencyKey: "wake-once" });
    expect(await heardUpToNow()).toEqual(["mail"]);
    heard = [];
    const again = await t.conveyor.enqueue(mail, {}, { idempotencyKey: "wake-once" });
    expect(again.created).toBe(false);
    expect(await heardUpToNow()).toEqual([]);
  });

  it("the insert statement leaves out its NOTIFY only when told the wake-up follows the commit", async () => {
    const { jobInsertKeyless } = bindQueries(t.schema);
    const insert = (wakeAfterCommit: boolean) =>
      t.conveyor.pool.query(jobInsertKeyless.text, [uuidv7(), "default", "mail", "mail", "{}", 0, 3, null, null, null, wakeAfterCommit, `${t.schema}:jobs`, null, null]);
    await insert(true);
    expect(await heardUpToNow()).toEqual([]);
    await insert(false);
    expect(await heardUpToNow()).toEqual(["mail"]);
  });

  it("close() sends the wake-ups of jobs just enqueued before it ends the pool", async () => {
    const short = new Conveyor({ connectionString: testDatabaseUrl(), schema: t.schema, jobs: [mail], logger: silent });
    // Two at once, so that one of them leaves its wake-up until after its commit.
    await Promise.all([short.enqueue(mail, {}, { queue: "late-1" }), short.enqueue(mail, {}, { queue: "late-2" })]);
    await short.close();
    expect(new Set(await heardUpToNow())).toEqual(new Set(["late-1", "late-2"]));
  });
});
