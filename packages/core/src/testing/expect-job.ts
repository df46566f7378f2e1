import { AssertionError } from "node:assert";
import type { ConveyorClient } from "../client/conveyor-client.js";
import type { AnyJobDefinition } from "../core/define-job.js";
import type { Job } from "../core/model.js";
import type { JobStatus } from "../core/states.js";

/** How many jobs of a kind `expectEnqueued` reads (newest first), and at most how many a failure lists. */
const READ_LIMIT = 1_000;
const LISTED_IN_FAILURE = 10;

/** What an enqueued job must match; every field optional, all given must match. */
export interface JobMatch {
  /** A deep partial of the stored payload: objects match on the keys given, arrays element by element. */
  payload?: unknown;
  /** The job's queue. */
  queue?: string;
  /** The job's tenant. */
  tenant?: string;
  /** The job's priority. */
  priority?: number;
  /** Its status, or one of these. Default: any. */
  status?: JobStatus | readonly JobStatus[];
}

/** Find the newest job of `job`'s kind matching `match`; throw an AssertionError unless found is `expected`. */
export async function expectJob(client: ConveyorClient, job: AnyJobDefinition | string, match: JobMatch, expected: boolean): Promise<Job> {
  const kind = typeof job === "string" ? job : job.kind;
  const { items } = await client.listJobs({ kind, limit: READ_LIMIT });
  const found = items.find((candidate) => matches(candidate, match));
  if (expected && !found) {
    const listed = items.slice(0, LISTED_IN_FAILURE).map(describe);
    throw new AssertionError({
      message: `expected a job of kind "${kind}" matching ${JSON.stringify(match)}; found ${items.length === 0 ? "no job of that kind" : `${items.length} that do not match:\n  ${listed.join("\n  ")}`}`,
      actual: items.slice(0, LISTED_IN_FAILURE).map(describe),
      expected: match,
      operator: "expectEnqueued",
    });
  }
  if (!expected && found) {
    throw new AssertionError({
      message: `expected no job of kind "${kind}" matching ${JSON.stringify(match)}; found ${describe(found)}`,
      actual: describe(found),
      expected: null,
      operator: "expectNotEnqueued",
    });
  }
  return found!;
}

function describe(job: Job): string {
  return `${job.id} ${job.status} queue=${job.queue} tenant=${job.tenant} priority=${job.priority} payload=${JSON.stringify(job.payload)}`;
}

function matches(job: Job, match: JobMatch): boolean {
  if (match.queue !== undefined && job.queue !== match.queue) return false;
  if (match.tenant !== undefined && job.tenant !== match.tenant) return false;
  if (match.priority !== undefined && job.priority !== match.priority) return false;
  if (match.status !== undefined) {
    const statuses: readonly JobStatus[] = typeof match.status === "string" ? [match.status] : match.status;
    if (!statuses.includes(job.status)) return false;
  }
  return match.payload === undefined || partialMatch(job.payload, match.payload);
}

/** True when `actual` has everything `expected` has: objects by the keys given, arrays by length and element, the rest by Object.is. */
export function partialMatch(actual: unknown, expected: unknown): boolean {
  if (expected instanceof Date) return actual instanceof Date ? actual.getTime() === expected.getTime() : actual === expected.toISOString();
  if (Array.isArray(expected)) {
    return Array.isArray(actual) && actual.length === expected.length && expected.every((item, i) => partialMatch(actual[i], item));
  }
  if (expected !== null && typeof expected === "object") {
    if (actual === null || typeof actual !== "object" || Array.isArray(actual)) return false;
    return Object.entries(expected).every(([key, value]) => partialMatch((actual as Record<string, unknown>)[key], value));
  }
  return Object.is(actual, expected);
}
