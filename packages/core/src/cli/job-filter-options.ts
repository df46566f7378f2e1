import { type Command, InvalidArgumentError, Option } from "commander";
import type { JobFilter } from "../core/job-filter.js";
import { JOB_STATUSES, type JobStatus } from "../core/states.js";
import { parseStrictJson, StrictJsonError } from "../wire/strict-json.js";
import { isoTime } from "./arguments.js";

// The search filter as command-line options, shared by `conveyor jobs list`,
// `conveyor jobs count` and the bulk actions, so each names jobs the same way.

/** The options `addJobFilterOptions` adds, as commander parses them: the filter's fields, states always a list. */
export type JobFilterFlags = Omit<JobFilter, "status" | "tenant"> & { status?: JobStatus[]; tenant?: string };

function statusList(value: string): JobStatus[] {
  const list = value.split(",").map((s) => s.trim());
  for (const status of list) {
    if (!(JOB_STATUSES as readonly string[]).includes(status)) {
      throw new InvalidArgumentError(`expected one or more of ${JOB_STATUSES.join(", ")}, comma-separated`);
    }
  }
  return list as JobStatus[];
}

function jsonObject(value: string): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = parseStrictJson(Buffer.from(value, "utf8"));
  } catch (error) {
    const issue = error instanceof StrictJsonError ? error.issue : undefined;
    if (issue) throw new InvalidArgumentError(`${issue.message}${issue.path === "" ? "" : ` (at ${issue.path})`}`);
    throw new InvalidArgumentError(`expected a JSON object: ${(error as Error).message}`);
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) throw new InvalidArgumentError('expected a JSON object, e.g. {"customerId":42}');
  return parsed as Record<string, unknown>;
}

/** Add the search filter's options to `command`. */
export function addJobFilterOptions(command: Command): Command {
  return command
    .addOption(new Option("--status <states>", `only jobs in these states, comma-separated (${JOB_STATUSES.join(", ")})`).argParser(statusList))
    .option("--kind <kind>", "only jobs of this kind")
    .option("--queue <queue>", "only jobs in this queue")
    .option("--tenant <tenant>", "only this tenant's jobs (default: every tenant)")
    .option("--id <prefix>", "a job id, or its first hexadecimal digits (at least 4)")
    .option("--idempotency-key <key>", "the job created with this idempotency key")
    .option("--unique-key <key>", "the job holding this unique key now")
    .option("--payload <json>", 'jobs whose payload contains this JSON object, e.g. \'{"customerId":42}\'', jsonObject)
    .option("--error <text>", "jobs whose last error's message contains this text (case-insensitive)")
    .option("--created-after <time>", "jobs created at or after this ISO 8601 time", isoTime)
    .option("--created-before <time>", "jobs created before this ISO 8601 time", isoTime)
    .option("--finished-after <time>", "jobs finished at or after this ISO 8601 time", isoTime)
    .option("--finished-before <time>", "jobs finished before this ISO 8601 time", isoTime);
}

/** The library's filter from the parsed options (fields not given are left out). */
export function jobFilterOf(flags: JobFilterFlags): JobFilter {
  const filter: JobFilter = {};
  for (const key of [
    "status", "kind", "queue", "tenant", "id", "idempotencyKey", "uniqueKey", "payload", "error",
    "createdAfter", "createdBefore", "finishedAfter", "finishedBefore",
  ] as const) {
    if (flags[key] !== undefined) (filter as Record<string, unknown>)[key] = flags[key];
  }
  return filter;
}
