/**
 * Every command that takes `--json` prints one JSON value, alone, on
 * stdout; its logs go to stderr. The commands are read from the commander
 * program itself, so a new one fails here until it has an invocation below.
 *
 * They run against an embedded PostgreSQL this file starts in a directory
 * of its own, which each CLI process joins (as when `conveyor dev` runs
 * beside it): joining is logged, and CONVEYOR_LOG_LEVEL=debug makes every
 * process log more, so a logger writing to stdout cannot go unseen.
 */
import type { Command } from "commander";
import { chmod, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import exampleJobs from "../../packages/core/examples/jobs.js";
import { createProgram } from "../../packages/core/src/cli/program.js";
import { type EmbeddedPostgres, startEmbeddedPostgres } from "../../packages/embedded/src/embedded-postgres.js";
import { Conveyor, defineJob } from "../../packages/core/src/index.js";
import { type CliResult, mapLimit, runCli, runUntilFinished, silent } from "./support.js";

/** The commands (as `conveyor <path>` words) that have `--json` themselves or from a parent, and run something. */
function commandsWithJson(command: Command, path: string[] = [], inherited = false): string[] {
  const has = inherited || command.options.some((option) => option.long === "--json");
  // Commander keeps the action handler private; a command without one only groups others.
  const runs = (command as unknown as { _actionHandler: unknown })._actionHandler !== null;
  const own = has && runs && path.length > 0 ? [path.join(" ")] : [];
  return [...own, ...command.commands.flatMap((sub) => commandsWithJson(sub, [...path, sub.name()], has))];
}

interface Fixture {
  jobToShow: string;
  jobToCancel: string;
  flowToShow: string;
  flowToCancel: string;
  deadToShow: string;
  deadToRequeue: string;
  deadToPurge: string;
  bulkOperation: string;
  durableToList: string;
  durableToResume: string;
  durableToRerun: string;
}

/** A durable job that records a step and sleeps: for `jobs steps`, `jobs resume` and `jobs rerun`. */
const napping = defineJob({
  kind: "fixture.nap",
  schema: z.object({}),
  handler: async ({ step, sleep }) => {
    await step("first", () => 1);
    await sleep("nap", 86_400_000);
  },
});

const SUMMARY = JSON.stringify({ text: "Conveyor runs jobs." });
const NO_JOBS = ["--kind", "no.such.kind"];

/**
 * One or more invocations per command, each expected to succeed. The
 * filters of the bulk actions select no job, so the invocations do not
 * disturb each other and run in parallel.
 */
const INVOCATIONS: Record<string, (f: Fixture) => string[][]> = {
  "keys create": () => [["keys", "create", "--tenant", "acme", "--name", "ci"]],
  "keys list": () => [["keys", "list"]],
  "jobs list": () => [["jobs", "list"]],
  "jobs count": () => [["jobs", "count", "--status", "dead"]],
  "jobs show": (f) => [["jobs", "show", f.jobToShow]],
  "jobs enqueue": () => [
    ["jobs", "enqueue", "text.summarize", SUMMARY],
    ["jobs", "enqueue", "--file", "-"],
  ],
  "jobs cancel": (f) => [["jobs", "cancel", f.jobToCancel]],
  "jobs steps": (f) => [["jobs", "steps", f.durableToList]],
  "jobs resume": (f) => [["jobs", "resume", f.durableToResume]],
  "jobs rerun": (f) => [["jobs", "rerun", f.durableToRerun, "--from-step", "first"]],
  "events send": () => [["events", "send", "fixture.event", "--key", "k", "--payload", '{"n":1}']],
  "flows list": () => [["flows", "list"]],
  "flows show": (f) => [["flows", "show", f.flowToShow]],
  "flows cancel": (f) => [["flows", "cancel", f.flowToCancel]],
  "dlq list": () => [["dlq", "list"]],
  "dlq show": (f) => [["dlq", "show", f.deadToShow]],
  "dlq requeue": (f) => [["dlq", "requeue", f.deadToRequeue]],
  "dlq purge": (f) => [["dlq", "purge", f.deadToPurge]],
  queues: () => [["queues"]],
  "queues pause": () => [["queues", "pause", "paused"]],
  "queues resume": () => [["queues", "resume", "resumed"]],
  "queues delete": () => [["queues", "delete", "deleted"]],
  "queues limit": () => [["queues", "limit", "limited", "--concurrency", "2", "--rate", "10/1000"]],
  "queues key-limit": () => [["queues", "key-limit", "keyed", "--concurrency", "1"]],
  "queues key-limit-delete": () => [["queues", "key-limit-delete", "unkeyed"]],
  "queues key-limits": () => [["queues", "key-limits", "keyed"]],
  "queues keys": () => [["queues", "keys", "keyed"]],
  "queues key": () => [["queues", "key", "keyed", "customer-1"]],
  tenants: () => [["tenants"]],
  "tenants limit": () => [["tenants", "limit", "acme", "--concurrency", "2"]],
  workers: () => [["workers"]],
  schedules: () => [["schedules"]],
  prune: () => [["prune"]],
  "bulk retry": () => [["bulk", "retry", ...NO_JOBS]],
  "bulk cancel": (f) => [
    ["bulk", "cancel", ...NO_JOBS],
    ["bulk", "cancel", f.bulkOperation],
  ],
  "bulk purge": () => [["bulk", "purge", ...NO_JOBS]],
  "bulk set-priority": () => [["bulk", "set-priority", "5", ...NO_JOBS]],
  "bulk move": () => [["bulk", "move", "elsewhere", ...NO_JOBS]],
  "bulk list": () => [["bulk", "list"]],
  "bulk show": (f) => [["bulk", "show", f.bulkOperation]],
};

const JOINED_LOG = '"msg":"using the embedded PostgreSQL another Conveyor process started"';

let directory: string | undefined;
let server: EmbeddedPostgres | undefined;
let conveyor: Conveyor | undefined;
let fixture: Fixture;

beforeAll(async () => {
  directory = await mkdtemp(join(tmpdir(), "conveyor-json-output-"));
  // As root, PostgreSQL runs as the `postgres` OS user, which must reach the data directory.
  await chmod(directory, 0o755);
  server = await startEmbeddedPostgres({ dataDir: join(directory, ".conveyor", "postgres") });
  conveyor = new Conveyor({ connectionString: server.connectionString, jobs: [...exampleJobs, napping], logger: silent, poolSize: 4 });
  await conveyor.migrate();

  // Three dead letters (PermanentError on the first attempt): to show, requeue and purge.
  await conveyor.enqueueMany(["a", "b", "c"].map((to) => ({ job: "email.send", payload: { to: `${to}@invalid.example`, subject: to, body: to } })));
  await runUntilFinished(conveyor, ["email.send"]);
  const dead = (await conveyor.deadLetters.list()).items.map((entry) => entry.id);
  expect(dead).toHaveLength(3);

  const summary = { text: "Conveyor runs jobs." };
  const jobToShow = await conveyor.enqueue("text.summarize", summary);
  const jobToCancel = await conveyor.enqueue("text.summarize", summary);
  const flow = () => conveyor!.flows.enqueue({ jobs: { a: { job: "text.summarize", payload: summary }, b: { job: "text.summarize", payload: summary, dependsOn: ["a"] } } });
  const [flowToShow, flowToCancel] = [await flow(), await flow()];
  // Three durable jobs, each asleep with one step recorded (a sleeping job is not among what runUntilFinished waits for).
  const [durableToList, durableToResume, durableToRerun] = await conveyor.enqueueMany([0, 1, 2].map(() => ({ job: napping, payload: {} })));
  await runUntilFinished(conveyor, ["fixture.nap"]);
  for (const job of [durableToList, durableToResume, durableToRerun]) expect((await conveyor.getJob(job!.id))?.status).toBe("sleeping");

  await conveyor.queues.pause("deleted");
  await conveyor.queues.pause("resumed");
  await conveyor.keyLimits.set("keyed", { concurrency: 2 });
  await conveyor.keyLimits.set("unkeyed", { concurrency: 2 });
  // An operation kept running, one job per batch and a minute between batches, for `bulk cancel <id>` to stop.
  Object.assign(conveyor.bulkActions.tuning, { batchSize: 1, pauseMs: 60_000 });
  const operation = await conveyor.bulkActions.start({ action: "set_priority", priority: 1, filter: { kind: "text.summarize" }, requestedBy: "test" });

  fixture = {
    jobToShow: jobToShow.id,
    jobToCancel: jobToCancel.id,
    flowToShow: flowToShow.id,
    flowToCancel: flowToCancel.id,
    deadToShow: dead[0]!,
    deadToRequeue: dead[1]!,
    deadToPurge: dead[2]!,
    bulkOperation: operation.id,
    durableToList: durableToList!.id,
    durableToResume: durableToResume!.id,
    durableToRerun: durableToRerun!.id,
  };
}, 180_000);

afterAll(async () => {
  await conveyor?.close();
  await server?.stop();
  if (directory) await rm(directory, { recursive: true, force: true });
});

describe("--json", () => {
  it("has an invocation here for every command that takes it", () => {
    const commands = commandsWithJson(createProgram("0.0.0"));
    expect(commands.length).toBeGreaterThan(30);
    expect(commands.filter((command) => !(command in INVOCATIONS)), "commands with --json and no invocation in INVOCATIONS").toEqual([]);
    expect(Object.keys(INVOCATIONS).filter((command) => !commands.includes(command)), "invocations of commands without --json").toEqual([]);
  });

  it("prints one JSON value alone on stdout, and logs on stderr, for every command", async () => {
    const env: NodeJS.ProcessEnv = { ...process.env, NODE_OPTIONS: "", CONVEYOR_LOG_LEVEL: "debug" };
    delete env.DATABASE_URL;
    const invocations = Object.values(INVOCATIONS).flatMap((invocation) => invocation(fixture));
    const input = `${JSON.stringify({ kind: "text.summarize", payload: { text: "From a file." } })}\n`;
    const results = await mapLimit(invocations, 3, (args) => runCli([...args, "--json"], { cwd: directory, env, input, timeoutMs: 90_000 }));
    const problems = invocations.flatMap((args, index) => {
      const result: CliResult = results[index]!;
      const found: string[] = [];
      if (result.code !== 0) found.push(`exit ${result.code}`);
      let parsed: unknown;
      try {
        parsed = JSON.parse(result.stdout);
      } catch {
        found.push("stdout is not one JSON value");
      }
      // One line: exactly the value's serialization, nothing before or after it.
      if (parsed !== undefined && result.stdout !== `${JSON.stringify(parsed)}\n`) found.push("stdout holds more than the JSON value");
      if (!result.stderr.includes(JOINED_LOG)) found.push("the log line is not on stderr");
      return found.length === 0
        ? []
        : [`conveyor ${args.join(" ")} --json: ${found.join("; ")}\n--- stdout ---\n${result.stdout.slice(0, 2000)}\n--- stderr ---\n${result.stderr.slice(-2000)}`];
    });
    expect(problems.join("\n\n")).toBe("");
  }, 300_000);
});
