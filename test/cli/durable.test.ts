/**
 * `conveyor events send` and `conveyor jobs steps|resume|rerun` as real
 * processes (the built CLI) against the test database, in a schema of this
 * file's own. Jobs get into their states through a real worker in this
 * process, running durable handlers on the same schema: each command's
 * happy path, --json alone on stdout, and bad input refused with one line
 * on stderr and nothing changed.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { defineJob, PermanentError } from "../../packages/core/src/index.js";
import { stepJson } from "../../packages/core/src/wire/step-json.js";
import { countRows, createTestConveyor, type TestConveyor } from "../helpers/database.js";
import { waitFor } from "../helpers/wait-for.js";
import { type CliResult, runCli, runUntilFinished, silent, stderrLines } from "./support.js";

const DAY = 86_400_000;
const MISSING = "0190f5c2-0000-7000-8000-000000000000";
const UUID = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}";
const ISO = "\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z";

/** How many times each job's step functions ran, by `<job id>:<step>`. */
const calls = new Map<string, number>();
const counted = <T>(jobId: string, step: string, value: T): T => {
  calls.set(`${jobId}:${step}`, (calls.get(`${jobId}:${step}`) ?? 0) + 1);
  return value;
};
/** Broken jobs fail after their first step until this is set. */
let fixed = false;

const nap = defineJob({
  kind: "cli.nap",
  schema: z.object({}),
  handler: async ({ job, step, sleep }) => {
    const fetched = await step("fetch", () => counted(job.id, "fetch", { rows: 3 }));
    await sleep("nap", DAY);
    return fetched;
  },
});

const awaitPayment = defineJob({
  kind: "cli.await",
  schema: z.object({ account: z.string() }),
  handler: async ({ payload, step, waitForEvent }) => {
    await step("prepare", () => "ready");
    const paid = await waitForEvent<{ plan: string }>("paid", { event: "invoice.paid", key: payload.account });
    return { paid };
  },
});

const broken = defineJob({
  kind: "cli.broken",
  schema: z.object({}),
  maxAttempts: 1,
  handler: async ({ job, step }) => {
    await step("one", () => counted(job.id, "one", 1));
    if (!fixed) throw new PermanentError("broken until fixed");
    return "fixed";
  },
});

const quick = defineJob({ kind: "cli.quick", schema: z.object({}), handler: () => "done" });

let t: TestConveyor;
const ids = {} as Record<"napA" | "napB" | "napC" | "acct1" | "acct2" | "acme" | "untouched" | "brokenA" | "brokenB" | "quick", string>;

const cli = (...args: string[]) => runCli([...args, "--schema", t.schema]);

/** The one JSON value a --json command printed, alone on stdout. */
function jsonOf(result: CliResult): unknown {
  expect(result.code, result.stderr).toBe(0);
  const parsed = JSON.parse(result.stdout);
  expect(result.stdout).toBe(`${JSON.stringify(parsed)}\n`);
  return parsed;
}

/** A refusal: a non-zero exit, one line on stderr matching `line`, nothing on stdout. */
function expectRefused(result: CliResult, line: RegExp): void {
  expect(result.code, result.stdout).not.toBe(0);
  expect(stderrLines(result), result.stderr).toHaveLength(1);
  expect(stderrLines(result)[0]).toMatch(line);
  expect(result.stdout).toBe("");
}

const statusOf = async (id: string) => (await t.conveyor.getJob(id))?.status;
const job = async (id: string) => (await t.conveyor.getJob(id))!;

beforeAll(async () => {
  t = await createTestConveyor({ jobs: [nap, awaitPayment, broken, quick], logger: silent });
  const enqueue = async (definition: { kind: string }, payload: unknown, tenant?: string) =>
    (await t.conveyor.enqueue(definition.kind, payload, { tenant })).id;
  Object.assign(ids, {
    napA: await enqueue(nap, {}),
    napB: await enqueue(nap, {}),
    napC: await enqueue(nap, {}),
    acct1: await enqueue(awaitPayment, { account: "acct_1" }),
    acct2: await enqueue(awaitPayment, { account: "acct_2" }),
    acme: await enqueue(awaitPayment, { account: "acct_9" }, "acme"),
    untouched: await enqueue(awaitPayment, { account: "acct_x" }),
    brokenA: await enqueue(broken, {}),
    brokenB: await enqueue(broken, {}),
    quick: await enqueue(quick, {}),
  });
  const worker = t.conveyor.worker({ concurrency: 4, pollIntervalMs: 50, logger: silent });
  await worker.start();
  try {
    const expected: Record<string, string> = {
      napA: "sleeping",
      napB: "sleeping",
      napC: "sleeping",
      acct1: "sleeping",
      acct2: "sleeping",
      acme: "sleeping",
      untouched: "sleeping",
      brokenA: "dead",
      brokenB: "dead",
      quick: "succeeded",
    };
    await waitFor("every job to sleep or end", async () => {
      for (const [name, status] of Object.entries(expected)) if ((await statusOf(ids[name as keyof typeof ids])) !== status) return false;
      return true;
    });
  } finally {
    await worker.stop();
  }
});

afterAll(async () => {
  await t?.cleanup();
});

describe("conveyor events send", () => {
  it("wakes the jobs waiting for the event, by name, key and tenant, and they receive its payload", async () => {
    const sent = await cli("events", "send", "invoice.paid", "--key", "acct_1", "--payload", '{"plan":"pro"}');
    expect(sent.code, sent.stderr).toBe(0);
    expect(sent.stdout).toMatch(new RegExp(`^sent event ${UUID}; woke 1 job:\\n  ${ids.acct1}\\n$`));
    expect(await statusOf(ids.acct1)).toBe("queued");
    const [, paid] = await t.conveyor.steps.list(ids.acct1);
    expect(paid).toMatchObject({ name: "paid", state: "received", result: { plan: "pro" } });
    expect(paid!.eventId).toBe(/sent event (\S+);/.exec(sent.stdout)![1]);

    const json = jsonOf(await cli("events", "send", "invoice.paid", "--key", "acct_2", "--payload", '{"plan":"team"}', "--json"));
    expect(json).toEqual({ id: expect.stringMatching(new RegExp(`^${UUID}$`)), jobIds: [ids.acct2] });

    // The acme job waits in its tenant: an event of the default tenant does not reach it.
    expect(jsonOf(await cli("events", "send", "invoice.paid", "--key", "acct_9", "--json"))).toMatchObject({ jobIds: [] });
    expect(await statusOf(ids.acme)).toBe("sleeping");
    const none = await cli("events", "send", "invoice.unknown");
    expect(none.code, none.stderr).toBe(0);
    expect(none.stdout).toMatch(new RegExp(`^sent event ${UUID}; no job was waiting for it`));
    expect(jsonOf(await cli("events", "send", "invoice.paid", "--key", "acct_9", "--tenant", "acme", "--json"))).toMatchObject({ jobIds: [ids.acme] });

    await runUntilFinished(t.conveyor, ["cli.await"]);
    expect(await job(ids.acct1)).toMatchObject({ status: "succeeded", result: { paid: { plan: "pro" } } });
    expect(await job(ids.acct2)).toMatchObject({ status: "succeeded", result: { paid: { plan: "team" } } });
    expect(await job(ids.acme)).toMatchObject({ status: "succeeded", result: { paid: null } });
  });

  it("refuses a payload that is not JSON, or empty, with one line, and stores nothing", async () => {
    const events = await countRows(t.conveyor, "events");
    expectRefused(await cli("events", "send", "invoice.paid", "--key", "acct_x", "--payload", "{bad"), /^conveyor: payload is not valid JSON: /);
    expectRefused(await cli("events", "send", "invoice.paid", "--key", "acct_x", "--payload", ""), /^conveyor: payload is empty: give a JSON value/);
    expectRefused(await cli("events", "send", "invoice.paid", "--key", "acct_x", "--tenant", ""), /^conveyor: .*tenant/);
    expectRefused(await cli("events", "send"), /missing required argument 'event'/);
    expect(await countRows(t.conveyor, "events")).toBe(events);
    expect(await statusOf(ids.untouched)).toBe("sleeping");
    expect((await t.conveyor.steps.list(ids.untouched)).map((record) => record.state)).toEqual(["completed", "awaiting"]);
  });
});

describe("conveyor jobs steps", () => {
  it("lists a job's steps, sleeps and waits as a table, with wake times, events and keys", async () => {
    const slept = await cli("jobs", "steps", ids.napA);
    expect(slept.code, slept.stderr).toBe(0);
    const [header, fetch, sleep, ...rest] = slept.stdout.split("\n");
    expect(header).toMatch(/^NAME\s+KIND\s+STATE\s+ATTEMPT\s+STARTED\s+FINISHED\s+WAKE AT\s+EVENT\s+KEY$/);
    expect(fetch).toMatch(new RegExp(`^fetch\\s+step\\s+completed\\s+1\\s+${ISO}\\s+${ISO}\\s+-\\s+-\\s+-$`));
    const [, napRecord] = await t.conveyor.steps.list(ids.napA);
    expect(sleep).toMatch(new RegExp(`^nap\\s+sleep\\s+asleep\\s+1\\s+${ISO}\\s+-\\s+${napRecord!.wakeAt!.toISOString()}\\s+-\\s+-$`));
    expect(rest).toEqual([""]);

    const waiting = await cli("jobs", "steps", ids.untouched);
    expect(waiting.code, waiting.stderr).toBe(0);
    expect(waiting.stdout).toMatch(new RegExp(`^paid\\s+wait\\s+awaiting\\s+1\\s+${ISO}\\s+-\\s+no deadline\\s+invoice\\.paid\\s+acct_x$`, "m"));
  });

  it("prints { items } with --json, the records as the library reads them", async () => {
    for (const id of [ids.napA, ids.untouched, ids.acct1]) {
      const expected = JSON.parse(JSON.stringify({ items: (await t.conveyor.steps.list(id)).map(stepJson) }));
      expect(jsonOf(await cli("jobs", "steps", id, "--json"))).toEqual(expected);
    }
    expect(jsonOf(await cli("jobs", "steps", ids.untouched, "--json"))).toMatchObject({
      items: [
        { name: "prepare", kind: "step", state: "completed", result: "ready", wakeAt: null },
        { name: "paid", kind: "wait", state: "awaiting", wakeAt: null, event: "invoice.paid", eventKey: "acct_x", eventId: null },
      ],
    });
    expect(jsonOf(await cli("jobs", "steps", ids.quick, "--json"))).toEqual({ items: [] });
  });

  it("says when a job recorded nothing, and refuses a missing job or a bad id", async () => {
    const none = await cli("jobs", "steps", ids.quick);
    expect(none.code, none.stderr).toBe(0);
    expect(none.stdout).toBe(`job ${ids.quick} has recorded no steps, sleeps or waits\n`);
    expectRefused(await cli("jobs", "steps", MISSING), new RegExp(`^conveyor: job ${MISSING} not found$`));
    expectRefused(await cli("jobs", "steps", MISSING, "--json"), new RegExp(`^conveyor: job ${MISSING} not found$`));
    expectRefused(await cli("jobs", "steps", "42"), /'42' is invalid for argument 'id'\. expected a UUID/);
  });
});

describe("conveyor jobs resume", () => {
  it("runs a dead job again, out of the dead-letter queue, replaying its recorded steps", async () => {
    const resumed = await cli("jobs", "resume", ids.brokenA);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stdout).toBe(`resumed ${ids.brokenA} (cli.broken), its recorded steps kept: now queued\n`);
    expect(await job(ids.brokenA)).toMatchObject({ status: "queued", attempts: 0 });
    expect((await t.conveyor.deadLetters.list()).items.map((entry) => entry.jobId)).not.toContain(ids.brokenA);
    expect((await t.conveyor.steps.list(ids.brokenA)).map((record) => [record.name, record.state])).toEqual([["one", "completed"]]);

    expect(jsonOf(await cli("jobs", "resume", ids.brokenB, "--json"))).toMatchObject({ id: ids.brokenB, kind: "cli.broken", status: "queued", attempts: 0 });

    fixed = true;
    await runUntilFinished(t.conveyor, ["cli.broken"]);
    for (const id of [ids.brokenA, ids.brokenB]) {
      expect(await job(id)).toMatchObject({ status: "succeeded", result: "fixed" });
      expect(calls.get(`${id}:one`)).toBe(1); // replayed, not run again
    }
  });

  it("refuses a job that cannot resume, or a missing one, with one line, and changes nothing", async () => {
    const before = await job(ids.quick);
    expectRefused(
      await cli("jobs", "resume", ids.quick),
      new RegExp(`^conveyor: job ${ids.quick} is succeeded; only a job that is dead, sleeping, queued, retrying can be resumed$`),
    );
    expectRefused(await cli("jobs", "resume", ids.quick, "--json"), new RegExp(`^conveyor: job ${ids.quick} is succeeded;`));
    expect(await job(ids.quick)).toEqual(before);
    expectRefused(await cli("jobs", "resume", MISSING), new RegExp(`^conveyor: job ${MISSING} not found$`));
  });
});

describe("conveyor jobs rerun", () => {
  it("forgets the step named and every later record, keeps the earlier ones, and queues the job", async () => {
    const rerun = await cli("jobs", "rerun", ids.napA, "--from-step", "nap");
    expect(rerun.code, rerun.stderr).toBe(0);
    expect(rerun.stdout).toBe(`rerunning ${ids.napA} (cli.nap) from step "nap": now queued\n`);
    expect((await t.conveyor.steps.list(ids.napA)).map((record) => record.name)).toEqual(["fetch"]);
    expect(await statusOf(ids.napA)).toBe("queued");

    expect(jsonOf(await cli("jobs", "rerun", ids.napB, "--from-step", "fetch", "--json"))).toMatchObject({ id: ids.napB, kind: "cli.nap", status: "queued" });
    expect(await t.conveyor.steps.list(ids.napB)).toEqual([]);

    // Run again: napA replays fetch and sleeps anew; napB fetches again.
    const worker = t.conveyor.worker({ kinds: ["cli.nap"], pollIntervalMs: 50, logger: silent });
    await worker.start();
    try {
      await waitFor("both jobs to sleep again", async () => (await statusOf(ids.napA)) === "sleeping" && (await statusOf(ids.napB)) === "sleeping");
    } finally {
      await worker.stop();
    }
    expect(calls.get(`${ids.napA}:fetch`)).toBe(1);
    expect(calls.get(`${ids.napB}:fetch`)).toBe(2);
  });

  it("refuses an unknown step, a job that cannot rerun, a missing job or no --from-step, with one line, and changes nothing", async () => {
    const before = { job: await job(ids.napC), steps: await t.conveyor.steps.list(ids.napC) };
    expectRefused(await cli("jobs", "rerun", ids.napC, "--from-step", "nope"), new RegExp(`^conveyor: job ${ids.napC} has no step named "nope"$`));
    expectRefused(await cli("jobs", "rerun", ids.napC, "--from-step", "nope", "--json"), new RegExp(`^conveyor: job ${ids.napC} has no step named "nope"$`));
    expectRefused(await cli("jobs", "rerun", ids.napC), /required option '--from-step <name>' not specified/);
    expect({ job: await job(ids.napC), steps: await t.conveyor.steps.list(ids.napC) }).toEqual(before);

    const succeeded = { job: await job(ids.acct1), steps: await t.conveyor.steps.list(ids.acct1) };
    expectRefused(
      await cli("jobs", "rerun", ids.acct1, "--from-step", "paid"),
      new RegExp(`^conveyor: job ${ids.acct1} is succeeded; only a job that is dead, sleeping, queued, retrying can be rerun from a step$`),
    );
    expect({ job: await job(ids.acct1), steps: await t.conveyor.steps.list(ids.acct1) }).toEqual(succeeded);
    expectRefused(await cli("jobs", "rerun", MISSING, "--from-step", "nap"), new RegExp(`^conveyor: job ${MISSING} not found$`));
  });
});
