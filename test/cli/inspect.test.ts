/**
 * `conveyor jobs|dlq|queues|workers` as real processes (the built CLI)
 * against the test database, in a schema of this file's own: each command's
 * happy path, human and --json output, and its bad-argument path.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import exampleJobs from "../../packages/core/examples/jobs.js";
import { Conveyor, defineJob } from "../../packages/core/src/index.js";
import { countRows, createTestConveyor, type TestConveyor, testDatabaseUrl } from "../helpers/database.js";
import { type CliResult, mapLimit, REPO_ROOT, runCli, runUntilFinished, silent, stderrLines } from "./support.js";
import { waitFor } from "../helpers/wait-for.js";

let test: TestConveyor;
let schema: string;
let scratch: string;
const MISSING = "0190f5c2-0000-7000-8000-000000000000";

const cli = (...args: string[]) => runCli([...args, "--schema", schema]);
const json = (result: CliResult) => {
  expect(result.code, result.stderr).toBe(0);
  return JSON.parse(result.stdout);
};

beforeAll(async () => {
  test = await createTestConveyor({ jobs: exampleJobs, logger: silent });
  schema = test.schema;
  scratch = await mkdtemp(join(tmpdir(), "conveyor-cli-"));
  // Two dead letters (PermanentError on the first attempt): one to requeue, one to purge.
  await test.conveyor.enqueueMany([
    { job: "email.send", payload: { to: "first@invalid.example", subject: "a", body: "a" } },
    { job: "email.send", payload: { to: "second@invalid.example", subject: "b", body: "b" }, queue: "mail" },
  ]);
  await runUntilFinished(test.conveyor, ["email.send"]);
});

afterAll(async () => {
  await test?.cleanup();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

describe("conveyor jobs", () => {
  it("enqueues one job, lists it, shows it and cancels it", async () => {
    const enqueued = await cli("jobs", "enqueue", "text.summarize", '{"text":"Conveyor runs jobs. It keeps them."}', "--priority", "-5");
    expect(enqueued.code, enqueued.stderr).toBe(0);
    const id = /^enqueued ([0-9a-f-]{36}) \(text\.summarize in queue default, tenant default\)$/.exec(enqueued.stdout.trim())?.[1];
    expect(id, enqueued.stdout).toBeDefined();

    const table = await cli("jobs", "list", "--kind", "text.summarize");
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout.split("\n")[0]).toMatch(/^ID\s+KIND\s+QUEUE\s+TENANT\s+STATUS\s+ATTEMPTS\s+CREATED$/);
    expect(table.stdout).toContain(id);
    const page = json(await cli("jobs", "list", "--status", "queued", "--json"));
    expect(page.items.map((job: { id: string }) => job.id)).toContain(id);
    expect(page.items.find((job: { id: string }) => job.id === id)).toMatchObject({ kind: "text.summarize", status: "queued", priority: -5 });

    const shown = await cli("jobs", "show", id!);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toMatch(/^status:\s+queued$/m);
    expect(shown.stdout).toContain('"text": "Conveyor runs jobs. It keeps them."');
    expect(shown.stdout).toMatch(/attempts:\n {2}none yet/);
    expect(json(await cli("jobs", "show", id!, "--json"))).toMatchObject({ id, status: "queued", executions: [] });

    const cancelled = await cli("jobs", "cancel", id!);
    expect(cancelled.code, cancelled.stderr).toBe(0);
    expect(cancelled.stdout.trim()).toBe(`cancelled ${id}`);
    const again = await cli("jobs", "cancel", id!);
    expect(again.code).toBe(1);
    expect(stderrLines(again)).toEqual([`conveyor: job ${id} is already cancelled; nothing changed`]);
  });

  it("prints the cancel's outcome as JSON: cancelled, requested, or nothing changed", async () => {
    // A second client on the same schema, whose worker holds its job until the cancel reaches it.
    const hold = defineJob({
      kind: "test.hold",
      schema: { "~standard": { version: 1, vendor: "test", validate: (value: unknown) => ({ value }) } },
      handler: ({ signal }) => new Promise((_, reject) => signal.addEventListener("abort", () => reject(signal.reason))),
    });
    const holder = new Conveyor({ connectionString: testDatabaseUrl(), schema, jobs: [hold], logger: silent });
    const worker = holder.worker({ kinds: ["test.hold"], pollIntervalMs: 50, shutdownGraceMs: 0, logger: silent });
    try {
      const queued = await test.conveyor.enqueue("text.summarize", { text: "Cancel me while I wait." }, { delayMs: 60_000 });
      const running = await holder.enqueue("test.hold", {});
      await worker.start();
      await waitFor("the job to run", async () => (await holder.getJob(running.id))?.status === "running", 30_000);

      const cancelled = await cli("jobs", "cancel", queued.id, "--json");
      expect(json(cancelled)).toMatchObject({ outcome: "cancelled", job: { id: queued.id, status: "cancelled" } });
      const requested = await cli("jobs", "cancel", running.id, "--json");
      expect(json(requested)).toMatchObject({ outcome: "cancel_requested", job: { id: running.id, status: "running", cancelRequested: true } });

      // A finished job: the JSON says nothing changed, and the exit code is the one without --json.
      const finished = await cli("jobs", "cancel", queued.id, "--json");
      expect(finished.code).toBe(1);
      expect(JSON.parse(finished.stdout)).toMatchObject({ outcome: "already_terminal", job: { id: queued.id, status: "cancelled" } });
      expect(stderrLines(finished)).toEqual([`conveyor: job ${queued.id} is already cancelled; nothing changed`]);
    } finally {
      await worker.stop();
      await holder.close();
    }
  });

  it("shows a finished job's attempts and pages with --cursor", async () => {
    const dead = json(await cli("jobs", "list", "--status", "dead", "--limit", "1", "--json"));
    expect(dead.items).toHaveLength(1);
    expect(dead.nextCursor).toEqual(expect.any(String));
    const human = await cli("jobs", "list", "--status", "dead", "--limit", "1");
    expect(human.stdout).toContain(`more: --cursor ${dead.nextCursor}`);
    const next = json(await cli("jobs", "list", "--status", "dead", "--limit", "1", "--cursor", dead.nextCursor, "--json"));
    expect(next.items).toHaveLength(1);
    expect(next.items[0].id).not.toBe(dead.items[0].id);
    expect(next.nextCursor).toBeNull();

    const shown = await cli("jobs", "show", dead.items[0].id);
    expect(shown.stdout).toMatch(/^last error:\s+PermanentError: undeliverable address /m);
    expect(shown.stdout).toMatch(/^ {2}#\s+OUTCOME\s+WORKER\s+STARTED\s+FINISHED\s+ERROR$/m);
    expect(shown.stdout).toMatch(/^ {2}1\s+failed\s+/m);
  });

  it("shows a job's latest progress and its result", async () => {
    const { id } = await test.conveyor.enqueue("text.summarize", { text: "Progress is kept. Results are kept too." });
    await runUntilFinished(test.conveyor, ["text.summarize"]);
    const shown = await cli("jobs", "show", id);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toMatch(/^status:\s+succeeded$/m);
    expect(shown.stdout).toMatch(/^progress \(\d{4}-\d\d-\d\dT[\d:.]+Z\):\n {2}\{\n {4}"of": 7,\n {4}"counted": 7\n {2}\}$/m); // jsonb orders keys: shorter first
    expect(shown.stdout).toMatch(/^result:\n {2}\{\n {4}"words": 7,$/m);
    expect(json(await cli("jobs", "show", id, "--json"))).toMatchObject({ progress: { counted: 7, of: 7 }, result: { words: 7, sentences: 2 } });
  });

  it("streams an NDJSON file in one transaction, with progress and a final count", async () => {
    const path = join(scratch, "jobs.ndjson");
    const lines = Array.from({ length: 2_500 }, (_, n) =>
      JSON.stringify({ kind: "text.summarize", payload: { text: `line ${n}` }, ...(n === 7 ? { idempotencyKey: "seven" } : {}) }),
    );
    writeFileSync(path, `${lines.join("\n")}\n\n${lines[7]}\n`); // a blank line, and line 8 again (same key)
    const before = await countRows(test.conveyor, "jobs", "queue = 'bulk'");
    const result = await cli("jobs", "enqueue", "--file", path, "--queue", "bulk");
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toMatch(/^enqueued 2,500 jobs from .*jobs\.ndjson \(2,501 lines; 1 already existed \(same idempotency key\)\) in /);
    expect(result.stderr).toMatch(/enqueue \[#+\.*\] +\d+% [\d,]+ jobs/); // piped: plain progress lines
    expect(result.stderr).toMatch(/100% 2,501 jobs/);
    expect((await countRows(test.conveyor, "jobs", "queue = 'bulk'")) - before).toBe(2_500);

    // A two-line file ends within a second: no rate, which would only be noise.
    const short = join(scratch, "two.ndjson");
    writeFileSync(short, `${lines.slice(0, 2).join("\n")}\n`);
    const two = await cli("jobs", "enqueue", "--file", short, "--queue", "bulk");
    expect(two.code, two.stderr).toBe(0);
    expect(two.stderr).toMatch(/100% 2 jobs\n/);
    expect(two.stderr).not.toMatch(/\/s/);

    // stdin, and --json.
    const piped = await runCli(["jobs", "enqueue", "--file", "-", "--json", "--schema", schema], { input: `${lines.slice(0, 3).join("\n")}\n` });
    expect(JSON.parse(piped.stdout)).toMatchObject({ enqueued: 3, existing: 0, lines: 3 });

    // One bad line: nothing from the file is enqueued, and the line is named. (Lines without
    // the idempotency key: reused in another queue, the key would be refused first.)
    const bad = join(scratch, "bad.ndjson");
    writeFileSync(bad, `${lines.slice(8, 1_508).join("\n")}\n{"kind":"email.send","payload":{"to":"not an address","subject":"s","body":"b"}}\n`);
    const refused = await cli("jobs", "enqueue", "--file", bad, "--queue", "refused");
    expect(refused.code).toBe(1);
    expect(stderrLines(refused).at(-1)).toMatch(/^conveyor: .*bad\.ndjson:1501: invalid payload for job "email\.send": payload\.to: Invalid email address$/);
    expect(await countRows(test.conveyor, "jobs", "queue = 'refused'")).toBe(0);
  });
});

describe("conveyor dlq", () => {
  it("lists, shows, requeues and purges dead letters", async () => {
    const table = await cli("dlq", "list");
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout.split("\n")[0]).toMatch(/^ID\s+JOB\s+KIND\s+QUEUE\s+TENANT\s+REASON\s+ATTEMPTS\s+DEAD AT\s+LAST ERROR$/);
    const { items } = json(await cli("dlq", "list", "--json"));
    expect(items).toHaveLength(2);
    const [mail, plain] = [items.find((e: { queue: string }) => e.queue === "mail"), items.find((e: { queue: string }) => e.queue === "default")];
    expect(json(await cli("dlq", "list", "--queue", "mail", "--json")).items.map((e: { id: string }) => e.id)).toEqual([mail.id]);

    const shown = await cli("dlq", "show", mail.id);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toMatch(/^reason:\s+permanent_error$/m);
    expect(shown.stdout).toContain('"to": "second@invalid.example"');
    expect(shown.stdout).toMatch(/history:\n {2}#\s+OUTCOME/);
    expect(json(await cli("dlq", "show", mail.id, "--json"))).toMatchObject({ id: mail.id, jobId: mail.jobId, history: [{ outcome: "failed" }] });

    const requeued = await cli("dlq", "requeue", mail.id);
    expect(requeued.code, requeued.stderr).toBe(0);
    expect(requeued.stdout.trim()).toBe(`requeued job ${mail.jobId} (email.send) in queue mail`);
    expect((await test.conveyor.getJob(mail.jobId))?.status).toBe("queued");
    // The job says what happened to it.
    const requeuedJob = await cli("jobs", "show", mail.jobId);
    expect(requeuedJob.stdout).toMatch(/requeues:\n {2}AT\s+ACTION\s+FROM STEP\s+BULK ACTION\n {2}\S+\s+requeue\n/);
    expect(json(await cli("jobs", "show", mail.jobId, "--json")).requeues).toEqual([{ at: expect.any(String), action: "requeue" }]);

    const purged = await cli("dlq", "purge", plain.id, "--json");
    expect(json(purged)).toEqual({ purged: plain.id });
    expect(await test.conveyor.getJob(plain.jobId)).toBeNull();
    const empty = await cli("dlq", "list");
    expect(empty.stdout.trim()).toBe("the dead-letter queue is empty");
  });
});

describe("conveyor queues and conveyor workers", () => {
  it("shows counts per queue, and live workers with what they run", async () => {
    const table = await cli("queues");
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout.split("\n")[0]).toMatch(/^QUEUE\s+WAITING\s+QUEUED\s+RUNNING\s+RETRYING\s+SLEEPING\s+SUCCEEDED\s+CANCELLED\s+DEAD\s+OLDEST READY\s+LIMITS$/);
    const { items } = json(await cli("queues", "--json"));
    const expected = await test.conveyor.queueOverview.queueStats();
    expect(items.map((q: { queue: string; counts: unknown }) => [q.queue, q.counts])).toEqual(expected.map((q) => [q.queue, q.counts]));
    expect(json(await cli("queues", "--tenant", "nobody", "--json"))).toEqual({ items: [] });

    expect((await cli("workers")).stdout.trim()).toBe("no live workers");
    const worker = test.conveyor.worker({ kinds: ["webhook.deliver"], queues: ["hooks"], concurrency: 3, logger: silent });
    await worker.start();
    try {
      const listed = await cli("workers");
      expect(listed.code, listed.stderr).toBe(0);
      expect(listed.stdout).toMatch(new RegExp(`^${worker.id}\\s+\\S+\\s+${process.pid}\\s+hooks\\s+0/3\\s`, "m"));
      expect(json(await cli("workers", "--json")).items).toEqual([
        expect.objectContaining({ id: worker.id, pid: process.pid, queues: ["hooks"], concurrency: 3, runningJobIds: [] }),
      ]);
    } finally {
      await worker.stop();
    }
  });
});

describe("bad arguments and --help", () => {
  it("refuses each with one line on stderr and a non-zero exit", async () => {
    const cases: Array<[string[], RegExp]> = [
      [["jobs", "list", "--status", "finished"], /argument 'finished' is invalid\. expected one or more of waiting, queued, running/],
      [["jobs", "list", "--limit", "0"], /--limit.*expected a whole number from 1 to 1000/],
      [["jobs", "list", "--cursor", "garbage"], /cursor/],
      [["jobs", "show", "42"], /'42' is invalid for argument 'id'\. expected a UUID/],
      [["jobs", "show", MISSING], new RegExp(`job ${MISSING} not found`)],
      [["jobs", "show"], /missing required argument 'id'/],
      [["jobs", "enqueue"], /give a job kind \(and payload\), or --file <path>/],
      [["jobs", "enqueue", "no.such.kind"], /unknown job kind "no\.such\.kind"; the bundled examples define email\.send, text\.summarize, webhook\.deliver/],
      [["jobs", "enqueue", "text.summarize", "{not json"], /payload is not valid JSON/],
      [["jobs", "enqueue", "text.summarize", '{"text":""}'], /invalid payload for job "text\.summarize": payload\.text/],
      [["jobs", "enqueue", "text.summarize", "{}", "--priority", "5000"], /--priority.*-1000 to 1000/],
      [["jobs", "enqueue", "text.summarize", "{}", "--run-at", "tomorrow"], /--run-at.*ISO 8601/],
      [["jobs", "enqueue", "text.summarize", "--file", "x.ndjson"], /give <kind> \[payload\] or --file, not both/],
      [["jobs", "enqueue", "--file", "/nonexistent/jobs.ndjson"], /--file: cannot read \/nonexistent\/jobs\.ndjson: ENOENT/],
      [["jobs", "cancel", MISSING], new RegExp(`job ${MISSING} not found`)],
      [["jobs", "frobnicate"], /unknown command 'frobnicate'/],
      [["dlq", "list", "--limit", "abc"], /--limit.*expected a whole number/],
      [["dlq", "show", "nope"], /expected a UUID/],
      [["dlq", "requeue", MISSING], new RegExp(`dead letter ${MISSING} not found`)],
      [["dlq", "purge", MISSING], new RegExp(`dead letter ${MISSING} not found`)],
      [["queues", "extra"], /too many arguments for 'queues'/],
      [["workers", "--verbose"], /unknown option '--verbose'/],
    ];
    const results = await mapLimit(cases, 4, ([args]) => cli(...args));
    // A malformed DATABASE_URL is named as such, not as the DNS error the driver would give.
    const badUrl = await runCli(["queues", "--schema", schema], { env: { ...process.env, DATABASE_URL: "postgres//x", NODE_OPTIONS: "" } });
    cases.push([["DATABASE_URL=postgres//x", "queues"], /^conveyor: DATABASE_URL is not a PostgreSQL URL: expected postgres:\/\/user:password@host:port\/database$/]);
    results.push(badUrl);
    for (const [index, [args, mentions]] of cases.entries()) {
      const result = results[index]!;
      expect(result.code, args.join(" ")).not.toBe(0);
      expect(stderrLines(result), `${args.join(" ")}\n${result.stderr}`).toHaveLength(1);
      expect(stderrLines(result)[0], args.join(" ")).toMatch(mentions);
    }
  });

  it("prints its version", async () => {
    const { version } = JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")) as { version: string };
    for (const flag of ["--version", "-V"]) {
      const result = await runCli([flag]);
      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout).toBe(`${version}\n`);
    }
  });

  it("prints help for every command", async () => {
    const commands = [
      [],
      ["jobs"],
      ["jobs", "list"],
      ["jobs", "count"],
      ["jobs", "show"],
      ["jobs", "enqueue"],
      ["jobs", "cancel"],
      ["dlq"],
      ["dlq", "list"],
      ["dlq", "show"],
      ["dlq", "requeue"],
      ["dlq", "purge"],
      ["queues"],
      ["queues", "key-limit"],
      ["queues", "key-limit-delete"],
      ["queues", "key-limits"],
      ["queues", "keys"],
      ["queues", "key"],
      ["workers"],
      ["dev"],
      ["migrate"],
      ["worker"],
      ["api"],
      ["keys"],
    ];
    const results = await mapLimit(commands, 4, (args) => runCli([...args, "--help"]));
    for (const [index, args] of commands.entries()) {
      const result = results[index]!;
      expect(result.code, `${args.join(" ")} --help: ${result.stderr}`).toBe(0);
      expect(result.stdout).toMatch(new RegExp(`^Usage: conveyor${args.length ? ` ${args.join(" ")}` : ""} `));
    }
  });
});
