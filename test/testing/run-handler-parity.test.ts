/**
 * runHandler against a real worker: each handler runs once through
 * `runHandler` and once as the first attempt of a job on a real worker
 * (a test Conveyor's drain, retry delays not skipped, so the drain ends
 * after that one attempt), and the two must agree on the outcome, the
 * job's next status, the error's name and message, and the records of
 * its steps (names, kinds, states, results, errors). Sleeps and waits
 * that suspend are left out on purpose: in runHandler the test's time is
 * the handler's, so they return in the same attempt (docs/testing.md).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { MAX_STEP_RESULT_BYTES } from "../../packages/core/src/core/defaults.js";
import { defineJob, type JobContext } from "../../packages/core/src/core/define-job.js";
import { PermanentError } from "../../packages/core/src/core/errors.js";
import { createTestConveyor, runHandler, type TestConveyor } from "../../packages/core/src/testing/index.js";
import { testDatabaseUrl } from "../helpers/database.js";

const table = `parity_plans_${process.pid}`;
let t: TestConveyor;
/** The table's name, schema-qualified; set once the schema exists. */
let plans = "";

const tries = { maxAttempts: 3, backoff: { baseMs: 60_000, capMs: 60_000, jitter: 0 } };
const none = z.object({});
const job = (kind: string, _schema: typeof none, handler: (context: JobContext<z.infer<typeof none>>) => Promise<unknown>) =>
  defineJob({ kind: `parity.${kind}`, schema: none, ...tries, handler });

const handlers = [
  // The guide's old mistake: a transactional step returning the driver's query result.
  job("query-result", none, async ({ step }) => {
    await step("grant", { transaction: true }, async (tx) => (await tx.query(`INSERT INTO ${plans} (plan) VALUES ('trial')`)).rowCount);
    await step("upgrade", { transaction: true }, (tx) => tx.query(`UPDATE ${plans} SET plan = 'pro'`));
    return "upgraded";
  }),
  job("succeeds", none, async ({ step }) => {
    const a = await step("a", () => ({ at: new Date(0), n: 1 }));
    const nothing = await step("nothing", () => undefined);
    return { a, nothing };
  }),
  job("name-twice", none, async ({ step }) => {
    await step("same", () => 1);
    await step("same", () => 2);
  }),
  job("step-throws", none, async ({ step }) => {
    await step("first", () => "ok");
    await step("flaky", { retries: 1, backoff: { baseMs: 10, jitter: 0 } }, () => {
      throw new Error("down");
    });
  }),
  job("step-permanent", none, async ({ step }) => {
    await step("charge", { retries: 3 }, () => {
      throw new PermanentError("card refused");
    });
  }),
  job("step-too-big", none, async ({ step }) => {
    await step("big", () => "x".repeat(MAX_STEP_RESULT_BYTES));
  }),
  job("bad-retries", none, async ({ step }) => {
    await step("r", { retries: -1 }, () => 1);
  }),
  job("bad-name", none, async ({ step }) => {
    await step("", () => 1);
  }),
  job("bad-sleep", none, async ({ sleep }) => {
    await sleep("nap", -5);
  }),
  job("bad-wait", none, async ({ waitForEvent }) => {
    await waitForEvent("w", { event: "e", timeoutMs: Number.NaN });
  }),
  job("result-not-json", none, async () => ({ at: () => 1 })),
  job("throws", none, async () => {
    throw new TypeError("plain failure");
  }),
];

beforeAll(async () => {
  t = await createTestConveyor({ jobs: handlers, connectionString: testDatabaseUrl() });
  plans = `"${t.conveyor.options.schema}".${table}`;
  await t.conveyor.pool.query(`CREATE TABLE ${plans} (plan text NOT NULL)`);
});
afterAll(() => t?.close());

/** What both sides are compared on. */
interface Observed {
  outcome: string;
  nextStatus: string | null;
  error: { name: string; message: string } | null;
  steps: Array<{ name: string; kind: string; state: string; result?: unknown; error?: { name: string; message: string } }>;
  value: unknown;
}

const errorOf = (error: unknown) => (error == null ? null : { name: String((error as Error).name), message: String((error as Error).message) });

async function throughWorker(definition: (typeof handlers)[number]): Promise<Observed> {
  const { id } = await t.conveyor.enqueue(definition, {});
  const { attempts } = await t.drain({ skipRetryDelays: false });
  const mine = attempts.filter((attempt) => attempt.jobId === id);
  expect(mine.length, `${definition.kind}: one attempt`).toBe(1);
  const [attempt] = mine;
  const finished = (await t.conveyor.getJob(id))!;
  const records = await t.conveyor.steps.list(id);
  return {
    outcome: attempt!.outcome,
    nextStatus: finished.status,
    error: errorOf(attempt!.error),
    steps: records.map((record) => ({
      name: record.name,
      kind: record.kind,
      state: record.state,
      ...(record.state === "completed" && record.kind === "step" ? { result: record.result } : {}),
      ...(record.error ? { error: errorOf(record.error)! } : {}),
    })),
    value: finished.status === "succeeded" ? finished.result : undefined,
  };
}

async function throughRunHandler(definition: (typeof handlers)[number]): Promise<Observed> {
  const result = await runHandler(definition, {}, { tx: t.conveyor.pool });
  return {
    outcome: result.outcome,
    nextStatus: result.nextStatus,
    error: errorOf(result.error),
    steps: result.steps.map((record) => ({
      name: record.name,
      kind: record.kind,
      state: record.state,
      ...(record.state === "completed" ? { result: record.result } : {}),
      ...(record.error ? { error: errorOf(record.error)! } : {}),
    })),
    value: result.value ?? undefined,
  };
}

describe("runHandler and a real worker", () => {
  it.each(handlers.map((definition) => [definition.kind, definition] as const))("agree on %s: outcome, next status, error and steps", async (_kind, definition) => {
    await t.conveyor.pool.query(`TRUNCATE ${plans}`);
    const worker = await throughWorker(definition);
    await t.conveyor.pool.query(`TRUNCATE ${plans}`);
    const helper = await throughRunHandler(definition);
    expect(helper).toEqual(worker);
  });

  it("report the guide's old mistake as a StepError that dead-letters the job, and list the failed step", async () => {
    const helper = await throughRunHandler(handlers[0]!);
    expect(helper).toMatchObject({
      outcome: "failed",
      nextStatus: "dead",
      error: { name: "StepError", message: 'step "upgrade" returned a value that is not JSON: a function at result._types._types.getTypeParser' },
    });
    expect(helper.steps.map((step) => [step.name, step.state])).toEqual([
      ["grant", "completed"],
      ["upgrade", "failed"],
    ]);
  });
});
