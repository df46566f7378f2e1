import { type Command, Option } from "commander";
import type { Conveyor } from "../../conveyor.js";
import { DEFAULT_LIST_LIMIT, DEFAULT_SCHEMA, DEFAULT_TENANT, MAX_LIST_LIMIT, MAX_PRIORITY, MIN_PRIORITY } from "../../core/defaults.js";
import { ConfigError, ConflictError, NotFoundError, ValidationError } from "../../core/errors.js";
import type { DependencyLink, JobDependencies } from "../../core/flows.js";
import type { JobWithExecutions } from "../../core/model.js";
import { JOB_STATUSES, type JobStatus } from "../../core/states.js";
import { jobCountJson } from "../../wire/job-count-json.js";
import { jobDetailJson, jobJson } from "../../wire/serialize.js";
import { isoTime, listLimit, nonNegativeMs, priority, uuid } from "../arguments.js";
import { EXAMPLE_JOBS } from "../examples.js";
import { withDefault } from "../help-text.js";
import { parseJsonArgument } from "../json-argument.js";
import { enqueueFile } from "../enqueue-file.js";
import { positiveInt } from "../parse.js";
import { withSession } from "../session.js";
import { registerJobSteps } from "./job-steps.js";
import { addJobFilterOptions, type JobFilterFlags, jobFilterOf } from "../job-filter-options.js";
import { cell, formatFacts, formatTable, humanDuration, isoOrDash, printJson } from "../table.js";

const schemaOption = () => new Option("--schema <name>", "schema holding Conveyor's tables").default(DEFAULT_SCHEMA);
const jsonOption = () => new Option("--json", "print the HTTP API's JSON for the same request").default(false);

/** `conveyor jobs list|count|show|enqueue|cancel|steps|resume|rerun`: jobs, straight from the database. */
export function registerJobs(program: Command): void {
  const jobs = program
    .command("jobs")
    .description("list, count, show, enqueue and cancel jobs; a durable job's steps, resume and rerun (straight from the database)");

  addJobFilterOptions(jobs.command("list").description("jobs matching a search, newest first (one page; --cursor for the next)"))
    .option("--limit <n>", `page size, 1-${MAX_LIST_LIMIT}`, listLimit, DEFAULT_LIST_LIMIT)
    .option("--cursor <cursor>", "the next page, as printed after the previous one")
    .addOption(schemaOption())
    .addOption(jsonOption())
    .action(async (options: JobFilterFlags & { limit: number; cursor?: string; schema: string; json: boolean }) => {
      await withSession({ schema: options.schema, poolSize: 2, quiet: true }, async ({ conveyor }) => {
        const page = await conveyor.listJobs({ ...jobFilterOf(options), limit: options.limit, cursor: options.cursor });
        if (options.json) return printJson({ items: page.items.map(jobJson), nextCursor: page.nextCursor });
        if (page.items.length === 0) {
          process.stdout.write("no jobs\n");
          return;
        }
        process.stdout.write(
          formatTable(
            ["ID", "KIND", "QUEUE", "TENANT", "STATUS", "ATTEMPTS", "CREATED"],
            page.items.map((job) => [job.id, job.kind, job.queue, job.tenant, job.status, `${job.attempts}/${job.maxAttempts}`, isoOrDash(job.createdAt)]),
          ),
        );
        if (page.nextCursor) process.stdout.write(`more: --cursor ${page.nextCursor}\n`);
      });
    });

  addJobFilterOptions(
    jobs
      .command("count")
      .description("how many jobs match a search: exact up to 10,000, the planner's estimate beyond (printed with ~); --json prints { count, estimated }"),
  )
    .addOption(schemaOption())
    .addOption(jsonOption())
    .action(async (options: JobFilterFlags & { schema: string; json: boolean }) => {
      await withSession({ schema: options.schema, poolSize: 2, quiet: true }, async ({ conveyor }) => {
        const counted = await conveyor.countJobs(jobFilterOf(options));
        if (options.json) return printJson(jobCountJson(counted));
        const number = counted.count.toLocaleString("en-US");
        process.stdout.write(counted.estimated ? `~${number} jobs (estimated)\n` : `${number} job${counted.count === 1 ? "" : "s"}\n`);
      });
    });

  jobs
    .command("show")
    .description("one job: its fields, payload, result and every attempt")
    .argument("<id>", "job id", uuid)
    .addOption(schemaOption())
    .addOption(jsonOption())
    .action(async (id: string, options: { schema: string; json: boolean }) => {
      await withSession({ schema: options.schema, poolSize: 2, quiet: true }, async ({ conveyor }) => {
        const job = await conveyor.getJob(id);
        if (!job) throw new NotFoundError(`job ${id} not found`);
        if (options.json) return printJson(jobDetailJson(job));
        process.stdout.write(showJob(job) + showDependencies(await conveyor.flows.getJobDependencies(id)));
      });
    });

  jobs
    .command("enqueue")
    .description("enqueue one job (<kind> [payload]), or every line of an NDJSON file (--file)")
    .argument("[kind]", "job kind, from the jobs module")
    .argument("[payload]", "payload as JSON (default {})")
    .option("--file <path>", 'NDJSON file, one job per line ({"kind":…,"payload":…} like a batch item); "-" for stdin')
    .addOption(new Option("--jobs <module>", "jobs module whose kinds validate payloads").default(EXAMPLE_JOBS, "the bundled examples"))
    .option("--queue <queue>", "queue (default: the kind's)")
    .option("--priority <n>", `${MIN_PRIORITY}..${MAX_PRIORITY}, lower runs first (default: the kind's)`, priority)
    .option("--max-attempts <n>", "attempts before dead-lettering (default: the kind's)", positiveInt)
    .option("--tenant <tenant>", withDefault("tenant the job belongs to", JSON.stringify(DEFAULT_TENANT)))
    .option("--delay-ms <ms>", "run no earlier than this many ms from now", nonNegativeMs)
    .option("--run-at <time>", "run no earlier than this ISO 8601 time (with a zone)", isoTime)
    .option("--idempotency-key <key>", "same key (per tenant) returns the job it first created")
    .option("--no-progress", "no progress output for --file")
    .addOption(schemaOption())
    .addOption(jsonOption())
    .action(async (kind: string | undefined, payloadText: string | undefined, options: EnqueueOptions) => {
      if (options.file !== undefined && kind !== undefined) throw new ConfigError("give <kind> [payload] or --file, not both");
      if (options.file === undefined && kind === undefined) throw new ConfigError("give a job kind (and payload), or --file <path>");
      if (options.file !== undefined && (options.delayMs !== undefined || options.runAt !== undefined || options.idempotencyKey !== undefined)) {
        throw new ConfigError("--delay-ms, --run-at and --idempotency-key apply to one job; put them on the file's lines");
      }
      if (options.delayMs !== undefined && options.runAt !== undefined) throw new ConfigError("give --delay-ms or --run-at, not both");
      const payload = kind === undefined ? undefined : parseJsonArgument(payloadText ?? "{}", "payload");
      await withSession({ schema: options.schema, jobs: options.jobs, poolSize: 2, quiet: true }, async ({ conveyor }) => {
        try {
          if (options.file !== undefined) return await enqueueLines(conveyor, options);
          const job = await conveyor.enqueue(kind!, payload, {
            queue: options.queue,
            priority: options.priority,
            maxAttempts: options.maxAttempts,
            tenant: options.tenant,
            delayMs: options.delayMs,
            runAt: options.runAt,
            idempotencyKey: options.idempotencyKey,
          });
          if (options.json) return printJson({ ...jobJson(job), created: job.created });
          process.stdout.write(
            job.created
              ? `enqueued ${job.id} (${job.kind} in queue ${job.queue}, tenant ${job.tenant})\n`
              : `already enqueued with this idempotency key: ${job.id} (${job.status})\n`,
          );
        } catch (error) {
          throw withKindHint(error, conveyor, options.jobs);
        }
      });
    });

  jobs
    .command("cancel")
    .description(
      "cancel a job: at once when queued or retrying, its handler told at once when running; a finished job is left as it is (exit 1). " +
        '--json prints { "outcome": "cancelled" | "cancel_requested" | "already_terminal", "job": … }',
    )
    .argument("<id>", "job id", uuid)
    .addOption(schemaOption())
    .addOption(jsonOption())
    .action(async (id: string, options: { schema: string; json: boolean }) => {
      await withSession({ schema: options.schema, poolSize: 2, quiet: true }, async ({ conveyor }) => {
        const { outcome, job } = await conveyor.cancel(id);
        // With --json the outcome is printed whatever it is; the exit code is the same as without it.
        if (options.json) printJson({ outcome, job: jobJson(job) });
        if (outcome === "already_terminal") throw new ConflictError(`job ${job.id} is already ${job.status}; nothing changed`);
        if (options.json) return;
        process.stdout.write(
          outcome === "cancelled"
            ? `cancelled ${job.id}\n`
            : `cancellation requested for ${job.id}: it is running, and its handler is told to stop\n`,
        );
      });
    });

  registerJobSteps(jobs);
}

interface EnqueueOptions {
  file?: string;
  jobs: string;
  queue?: string;
  priority?: number;
  maxAttempts?: number;
  tenant?: string;
  delayMs?: number;
  runAt?: Date;
  idempotencyKey?: string;
  progress: boolean;
  schema: string;
  json: boolean;
}

async function enqueueLines(conveyor: Conveyor, options: EnqueueOptions): Promise<void> {
  const result = await enqueueFile(
    conveyor,
    options.file!,
    { queue: options.queue, priority: options.priority, maxAttempts: options.maxAttempts, tenant: options.tenant },
    options.progress && !options.json,
  );
  if (options.json) return printJson(result);
  const existing = result.existing > 0 ? `; ${result.existing.toLocaleString("en-US")} already existed (same idempotency key)` : "";
  process.stdout.write(
    `enqueued ${result.enqueued.toLocaleString("en-US")} job${result.enqueued === 1 ? "" : "s"} from ${options.file === "-" ? "stdin" : options.file}` +
      ` (${result.lines.toLocaleString("en-US")} lines${existing}) in ${humanDuration(result.ms)}\n`,
  );
}

/** "unknown job kind" gains the kinds that module has, and how to name another module. */
function withKindHint(error: unknown, conveyor: Conveyor, modulePath: string): unknown {
  if (!(error instanceof ValidationError) || !/unknown job kind/.test(error.message)) return error;
  const kinds = [...conveyor.jobs.keys()].join(", ");
  const from = modulePath === EXAMPLE_JOBS ? "the bundled examples" : modulePath;
  return new ValidationError(`${error.message}; ${from} define${kinds.includes(",") ? "" : "s"} ${kinds} (name your module with --jobs)`, error.issues);
}

function showJob(job: JobWithExecutions): string {
  const facts: Array<[string, string]> = [
    ["id", job.id],
    ["kind", job.kind],
    ["status", job.cancelRequested && job.status === "running" ? "running (cancel requested)" : job.status],
    ["tenant", job.tenant],
    ["queue", job.queue],
    ["priority", String(job.priority)],
    ["attempts", `${job.attempts}/${job.maxAttempts}`],
    ["run at", isoOrDash(job.runAt)],
    ["created", isoOrDash(job.createdAt)],
    ["started", isoOrDash(job.startedAt)],
    ["finished", isoOrDash(job.finishedAt)],
    ["idempotency key", job.idempotencyKey ?? "-"],
    ["unique key", job.uniqueKey ?? "-"],
    ["limit key", job.limitKey ?? "-"],
    ["last error", job.lastError ? `${job.lastError.name}: ${job.lastError.message}` : "-"],
  ];
  let text = formatFacts(facts);
  text += `\npayload:\n${indentJson(job.payload)}\n`;
  if (job.progress !== null) text += `\nprogress (${isoOrDash(job.progressUpdatedAt)}):\n${indentJson(job.progress)}\n`;
  if (job.result !== null) text += `\nresult:\n${indentJson(job.result)}\n`;
  text += `\nattempts:\n`;
  text +=
    job.executions.length === 0
      ? "  none yet\n"
      : formatTable(
          ["#", "OUTCOME", "WORKER", "STARTED", "FINISHED", "ERROR"],
          job.executions.map((execution) => [
            String(execution.attempt),
            execution.outcome,
            execution.workerId,
            isoOrDash(execution.startedAt),
            isoOrDash(execution.finishedAt),
            execution.error ? `${execution.error.name}: ${execution.error.message}` : "",
          ]),
        )
          .split("\n")
          .map((line) => (line ? `  ${line}` : line))
          .join("\n");
  if (job.requeues.length > 0) {
    text += `\nrequeues:\n`;
    text += formatTable(
      ["AT", "ACTION", "FROM STEP", "BULK ACTION"],
      job.requeues.map((requeue) => [isoOrDash(requeue.at), requeue.action, requeue.fromStep ?? "", requeue.bulkActionId ?? ""]),
    )
      .split("\n")
      .map((line) => (line ? `  ${line}` : line))
      .join("\n");
  }
  return text;
}

/** A job's flow, parents and children, or nothing when it has none (and is in no flow). */
function showDependencies(found: JobDependencies | null): string {
  if (!found || (found.flowId === null && found.dependencies.length === 0 && found.dependents.length === 0)) return "";
  const links = (title: string, list: DependencyLink[]) =>
    list.length === 0
      ? `\n${title}: none\n`
      : `\n${title}:\n` +
        formatTable(
          ["JOB", "NODE", "KIND", "STATUS", "ON FAILURE"],
          list.map((link) => [link.jobId, link.node ?? "-", link.kind, link.status, link.onFailure]),
        )
          .split("\n")
          .map((line) => (line ? `  ${line}` : line))
          .join("\n");
  let text = found.flowId === null ? "" : `\nflow: ${found.flowId} (node ${found.node})\n`;
  if (found.counts) text += `\ndependencies pending: ${found.counts.pending}, failed: ${found.counts.failed}, blocking: ${found.counts.blocking}\n`;
  return text + links("waits for", found.dependencies) + links("waited on by", found.dependents);
}

/** Pretty JSON, indented two spaces, each line made safe for a terminal. */
export function indentJson(value: unknown): string {
  return (JSON.stringify(value, null, 2) ?? "null")
    .split("\n")
    .map((line) => `  ${cell(line, 10_000)}`)
    .join("\n");
}
