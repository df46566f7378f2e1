import { randomBytes } from "node:crypto";
import { pathToFileURL } from "node:url";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AnyJobDefinition } from "../../packages/core/src/core/define-job.js";
import { createTestConveyor, type TestConveyor } from "../../packages/core/src/testing/index.js";
import { testDatabaseUrl } from "../helpers/database.js";
import { type DocBlock, typeErrors, writeExamples } from "./doc-examples.js";
import { sentMail } from "./examples/durable-execution.js";
import { provide } from "./examples/testing.js";

/**
 * The guides' code as users read it (the convention: test/docs/doc-examples.ts).
 * Every ```ts block of README.md and docs/*.md compiles under strict, each
 * as its own module with its guide's context; each named example
 * (`<!-- example: NAME; … -->`) runs here against a real database and does
 * what its guide says it does. A named example without a run here, or a
 * run without its example, fails. (The README's Quick start also runs from
 * the packed package, test/package/packed-app.test.ts.)
 */

let blocks: DocBlock[];
let contexts: string[];
beforeAll(() => {
  ({ blocks, contexts } = writeExamples());
});

const example = (name: string) => blocks.find((block) => block.name === name)!;
const load = async (name: string): Promise<Record<string, unknown>> => import(/* @vite-ignore */ pathToFileURL(example(name).file).href);

describe("the guides' code blocks", () => {
  it("are all found, and every named example has a run below", () => {
    expect(blocks.length).toBeGreaterThan(30);
    expect(new Set(blocks.map((block) => block.guide))).toContain("docs/testing.md");
    expect(blocks.filter((block) => block.name).map((block) => block.name).sort()).toEqual(Object.keys(RUNS).sort());
  });

  it("compile under strict, each with its guide's context", () => {
    expect(typeErrors(blocks, contexts)).toEqual([]);
  }, 120_000);
});

/**
 * The database the examples run on: a schema of their own holding the
 * guides' `plans` table, first on the search path of every connection
 * (the guides' SQL names it unqualified), beside the test Conveyor's schema.
 */
const schema = `docs_examples_${randomBytes(4).toString("hex")}`;
let connectionString: string;
let admin: pg.Client;
let client: pg.Client;
let t: TestConveyor;
let trial: AnyJobDefinition;

beforeAll(async () => {
  const url = new URL(testDatabaseUrl());
  url.searchParams.set("options", `-c search_path=${schema}`);
  connectionString = url.toString();
  admin = new pg.Client({ connectionString: testDatabaseUrl() });
  await admin.connect();
  await admin.query(`CREATE SCHEMA ${schema}`);
  await admin.query(`CREATE TABLE ${schema}.plans (account_id text PRIMARY KEY, plan text NOT NULL)`);
  client = new pg.Client({ connectionString });
  await client.connect();
  ({ trial } = (await load("trial")) as { trial: AnyJobDefinition });
  t = await createTestConveyor({ jobs: [trial], connectionString });
  provide({ t, client });
});
afterAll(async () => {
  await t?.close();
  await client?.end();
  await admin?.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await admin?.end();
});

const planOf = async (account: string) => (await client.query("SELECT plan FROM plans WHERE account_id = $1", [account])).rows[0]?.plan;

/** Each named example's run: what its guide promises, checked after its module ran. */
const RUNS: Record<string, () => Promise<void>> = {
  // docs/durable-execution.md: the trial job, through a real worker: trial, 3-day sleep, payment, upgraded.
  trial: async () => {
    sentMail.length = 0;
    const DAY = 86_400_000;
    const { id } = await t.conveyor.enqueue(trial, { email: "ada@example.com" });
    expect((await t.drain()).jobs.find((job) => job.id === id)?.status).toBe("sleeping");
    expect(await planOf("acct_1")).toBe("trial");
    expect(sentMail).toEqual([["ada@example.com", "welcome"]]);
    await t.advanceTime(3 * DAY);
    expect((await t.drain()).jobs.find((job) => job.id === id)?.status).toBe("sleeping"); // waiting for invoice.paid
    await t.conveyor.sendEvent({ event: "invoice.paid", key: "acct_1", payload: { plan: "pro" } });
    const { jobs } = await t.drain();
    expect(jobs.find((job) => job.id === id)).toMatchObject({ status: "succeeded", result: { upgraded: "pro" } });
    expect(await planOf("acct_1")).toBe("pro");
    expect(sentMail).toEqual([["ada@example.com", "welcome"]]); // once: the replays did not send again
  },

  // docs/testing.md: runHandler on the trial job, one run from the top with its events.
  "trial-run-handler": async () => {
    const { result } = (await load("trial-run-handler")) as { result: import("conveyor-jobs/testing").HandlerResult };
    expect(result.error).toBeUndefined();
    expect(result).toMatchObject({ outcome: "succeeded", nextStatus: "succeeded", value: { upgraded: "pro" } });
    expect(result.steps[0]).toMatchObject({ name: "create-account", kind: "step", state: "replayed" });
    expect(result.steps).toContainEqual({ name: "trial-period", kind: "sleep", state: "awake", duration: 259_200_000 });
    expect(result.steps.at(-1)).toEqual({ name: "upgrade", kind: "step", state: "completed", result: 1 });
    expect(await planOf("acct_1")).toBe("pro");
  },

  // docs/testing.md: the test Conveyor runs the trial job through its sleep and its event.
  "trial-drain": async () => {
    const { id, jobs, steps } = (await load("trial-drain")) as { id: string; jobs: Array<{ id: string; status: string; result: unknown }>; steps: unknown };
    expect(jobs.find((job) => job.id === id)).toMatchObject({ status: "succeeded", result: { upgraded: "pro" } });
    expect(steps).toEqual([
      ["create-account", "completed"],
      ["grant-trial", "completed"],
      ["welcome-mail", "completed"],
      ["trial-period", "awake"],
      ["payment", "received"],
      ["upgrade", "completed"],
    ]);
    expect(await planOf("acct_1")).toBe("pro");
  },
};

describe("the guides' named examples", () => {
  it.each(Object.keys(RUNS))("%s runs and does what its guide says", async (name) => {
    await client.query("TRUNCATE plans");
    await RUNS[name]!();
  });
});
