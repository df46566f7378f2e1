import type pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { Conveyor, defineJob } from "../src/index.js";
import { uuidv7 } from "../src/core/ids.js";
import { bindQueries } from "../src/store/queries.js";
import { connectTestClient, createTestConveyor, testDatabaseUrl, type TestConveyor } from "./helpers/database.js";
import { emptyPayload, silent } from "./worker/support.js";

// Migration 009: an enqueue Conveyor commits itself sends its wake-up after
// the commit (no NOTIFY inside it, which would hold PostgreSQL's notify lock
// through the commit's fsync); an insert in a caller's transaction still
// notifies at that transaction's commit.
const mail = defineJob({ kind: "mail", queue: "mail", schema: emptyPayload, handler: () => {} });
/** Long enough for a notification sent at a commit to have arrived. */
const QUIET_MS = 300;

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

  const quiet = () => new Promise((resolve) => setTimeout(resolve, QUIET_MS));
  async function heardWithin(ms: number): Promise<string[]> {
    const deadline = Date.now() + ms;
    while (heard.length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
    return heard;
  }

  it("enqueue and enqueueMany wake the job's queue once they have committed", async () => {
    await t.conveyor.enqueue(mail, {});
    expect(await heardWithin(5_000)).toContain("mail");
    heard = [];
    await t.conveyor.enqueueMany([{ job: mail, payload: {} }, { job: mail, payload: {}, queue: "other" }]);
    await heardWithin(5_000);
    await quiet();
    expect(new Set(heard)).toEqual(new Set(["mail", "other"]));
  });

  it("a job not yet due wakes nobody", async () => {
    await t.conveyor.enqueue(mail, {}, { delayMs: 60_000 });
    await quiet();
    expect(heard).toEqual([]);
  });

  it("an enqueue in the caller's transaction notifies at the caller's commit, not before", async () => {
    const client = await connectTestClient();
    try {
      await client.query("BEGIN");
      await t.conveyor.enqueue(mail, {}, { tx: client });
      await quiet();
      expect(heard).toEqual([]);
      await client.query("COMMIT");
      expect(await heardWithin(5_000)).toEqual(["mail"]);
    } finally {
      await client.end();
    }
  });

  it("the insert statement leaves out its NOTIFY only when told the wake-up follows the commit", async () => {
    const { jobInsertKeyless } = bindQueries(t.schema);
    const insert = (wakeAfterCommit: boolean) =>
      t.conveyor.pool.query(jobInsertKeyless.text, [uuidv7(), "default", "mail", "mail", "{}", 0, 3, null, null, null, wakeAfterCommit]);
    await insert(true);
    await quiet();
    expect(heard).toEqual([]);
    await insert(false);
    expect(await heardWithin(5_000)).toEqual(["mail"]);
  });

  it("close() sends the wake-ups of jobs just enqueued before it ends the pool", async () => {
    const short = new Conveyor({ connectionString: testDatabaseUrl(), schema: t.schema, jobs: [mail], logger: silent });
    await short.enqueue(mail, {}, { queue: "late" });
    await short.close();
    expect(await heardWithin(5_000)).toContain("late");
  });
});
