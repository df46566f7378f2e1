import { z } from "zod";
import { EXECUTION_OUTCOMES, JOB_STATUSES } from "../core/states.js";
import { PROBLEM_CONTENT_TYPE } from "./problem.js";
import { BATCH_OUTCOMES } from "./schemas.js";
import { toJsonSchema } from "./validation.js";

// Response schemas document the API (OpenAPI); responses are serialised
// with plain JSON.stringify, so payloads round-trip exactly whatever their shape.

const isoTime = z.iso.datetime({ offset: true });
// Serializing never throws on a stored row (see wire/serialize.ts): a time no JavaScript Date holds comes out as null.
const storedTime = isoTime.nullable().describe("ISO 8601; null only for a stored time outside what a JavaScript Date holds");
const errorShape = z.object({ name: z.string(), message: z.string() }).nullable();

const execution = z.object({
  id: z.uuid(),
  attempt: z.number().int(),
  workerId: z.string(),
  startedAt: storedTime,
  finishedAt: isoTime.nullable(),
  outcome: z.enum(EXECUTION_OUTCOMES),
  error: errorShape,
});

const job = z.object({
  id: z.uuid(),
  tenant: z.string(),
  kind: z.string(),
  queue: z.string(),
  payload: z.unknown(),
  status: z.enum(JOB_STATUSES),
  priority: z.number().int(),
  attempts: z.number().int(),
  maxAttempts: z.number().int(),
  runAt: storedTime,
  lastError: errorShape,
  cancelRequested: z.boolean(),
  uniqueKey: z.string().nullable().describe("the unique key the job holds; null when none or released"),
  createdAt: storedTime,
  updatedAt: storedTime,
  startedAt: isoTime.nullable(),
  finishedAt: isoTime.nullable(),
  result: z.unknown().describe("the handler's return value once the job succeeded; null when it returned nothing"),
  progress: z.unknown().describe("the latest value the handler reported with ctx.progress(); null before any"),
  progressUpdatedAt: isoTime.nullable().describe("when progress was stored"),
});

const deadLetter = z.object({
  id: z.uuid(),
  jobId: z.uuid(),
  tenant: z.string(),
  queue: z.string(),
  kind: z.string(),
  payload: z.unknown(),
  attempts: z.number().int(),
  maxAttempts: z.number().int(),
  reason: z.enum(["attempts_exhausted", "permanent_error"]),
  lastError: errorShape,
  history: z.array(execution),
  deadAt: storedTime,
});

const page = <T extends z.ZodType>(item: T) => z.object({ items: z.array(item), nextCursor: z.string().nullable() });

const queueStats = z.object({
  queue: z.string(),
  counts: z.object(Object.fromEntries(JOB_STATUSES.map((status) => [status, z.number().int()])) as Record<(typeof JOB_STATUSES)[number], z.ZodNumber>),
  oldestReadyAgeMs: z.number().nullable().describe("ms the oldest job ready to run has waited; null when none waits"),
  paused: z.boolean().describe("paused queues are not claimed"),
  concurrencyLimit: z.number().int().nullable().describe("most jobs running at once across all workers; null: no cap"),
  rateLimit: z.object({ count: z.number().int(), intervalMs: z.number().int() }).nullable().describe("claims per fixed window; null: none"),
});

const worker = z.object({
  id: z.string(),
  hostname: z.string(),
  pid: z.number().int(),
  queues: z.array(z.string()).nullable().describe("null: all queues"),
  kinds: z.array(z.string()),
  concurrency: z.number().int(),
  startedAt: storedTime,
  lastSeenAt: storedTime,
  runningJobIds: z.array(z.uuid()).describe("a tenant key sees only its own tenant's jobs here"),
});

const problem = z
  .looseObject({
    type: z.literal("about:blank"),
    title: z.string(),
    status: z.number().int(),
    detail: z.string(),
    code: z.string().describe("stable machine-readable code, e.g. VALIDATION, NOT_FOUND, IDEMPOTENCY_CONFLICT, UNIQUE_CONFLICT"),
    instance: z.string().optional(),
    requestId: z.string().optional(),
    errors: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
  })
  .describe("RFC 9457 problem details");

/** JSON Schemas of the response bodies, by name. */
export const responseSchemas = {
  job: toJsonSchema(job),
  jobWithExecutions: toJsonSchema(job.extend({ executions: z.array(execution) })),
  jobPage: toJsonSchema(page(job)),
  jobBatch: toJsonSchema(
    z.object({
      jobs: z.array(job),
      outcomes: z
        .array(z.enum(BATCH_OUTCOMES))
        .describe("per job: created; existing (the job its idempotency key created before); kept or replaced (the job holding its unique key)"),
    }),
  ),
  deadLetter: toJsonSchema(deadLetter),
  deadLetterPage: toJsonSchema(page(deadLetter)),
  queues: toJsonSchema(z.object({ items: z.array(queueStats) })),
  workers: toJsonSchema(z.object({ items: z.array(worker) })),
  problem: toJsonSchema(problem),
};

/** A JSON response in a route's `response` map. */
export function jsonResponse(description: string, schema: Record<string, unknown>) {
  return { description, content: { "application/json": { schema } } };
}

/** Problem responses for the given statuses, for a route's `response` map. */
export function problemResponses(...statuses: number[]): Record<number, unknown> {
  const descriptions: Record<number, string> = {
    400: "malformed request: bad JSON, a non-UUID id or a bad query parameter",
    401: "missing, unknown or revoked API key",
    403: "a tenant key named another tenant",
    404: "no such resource (or it belongs to another tenant)",
    409: "conflicts with the current state",
    413: "request body over the size limit",
    415: "request body is not JSON, names a charset other than UTF-8, or is compressed (Content-Encoding)",
    422: "the body breaks a rule (unknown kind, payload failing its schema, a field out of range)",
    503: "the request took too long, or the database is unreachable",
  };
  return Object.fromEntries(
    statuses.map((status) => [
      status,
      { description: descriptions[status] ?? "error", content: { [PROBLEM_CONTENT_TYPE]: { schema: responseSchemas.problem } } },
    ]),
  );
}

/** The problems every authenticated route can answer with. */
export const COMMON_PROBLEMS = [401, 503] as const;
