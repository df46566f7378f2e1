import { z } from "zod";
import { DEPENDENCY_POLICIES, type DependencyPolicy, JOB_STATUSES } from "conveyor-jobs";
import {
  bulkActionShape,
  deadLetterShape,
  errorShape,
  flowDetailShape,
  flowSummaryShape,
  jobCountShape,
  jobDetailShape,
  jobShape as job,
  keyLimitSettingsShape,
  keyLoadShape,
  keyStatusShape,
  optionalTime,
  scheduleShape,
  sentEventShape,
  statusCountsShape,
  stepShape,
  storedTime,
  workerShape,
} from "conveyor-jobs/server";
import { PROBLEM_CONTENT_TYPE } from "./problem.js";
import { BATCH_OUTCOMES } from "./schemas.js";
import { responseSchema } from "./validation.js";

// The response schemas: each route declares its own (per status and media
// type), and Fastify serializes the response through it (fast-json-stringify),
// so a response carries exactly what the OpenAPI document says. A shape the
// CLI prints too is defined once in src/wire beside its mapping from the
// library's type; the shapes only the API sends are here.

const isoTime = z.iso.datetime({ offset: true });

const page = <T extends z.ZodType>(item: T) => z.object({ items: z.array(item), nextCursor: z.string().nullable() });

const statusEstimated = z
  .object(
    Object.fromEntries(JOB_STATUSES.map((status) => [status, z.boolean()])) as Record<(typeof JOB_STATUSES)[number], z.ZodBoolean>,
  )
  .describe("per state, true when its count is the planner's estimate: only above the exact-count limit (a state with no jobs is 0, never estimated)");

const queueCounts = statusCountsShape.describe(
  "jobs by state: exact up to exactCountLimit (1,000) jobs of the queue in the state, estimated beyond (see estimated)",
);

const queueStats = z.object({
  queue: z.string(),
  counts: queueCounts,
  estimated: statusEstimated,
  oldestReadyAgeMs: z.number().nullable().describe("ms the oldest job ready to run has waited; null when none waits"),
  paused: z.boolean().describe("paused queues are not claimed"),
  concurrency: z.number().int().nullable().describe("most jobs running at once across all workers; null: no cap"),
  rateLimit: z.object({ count: z.number().int(), intervalMs: z.number().int() }).nullable().describe("claims per fixed window; null: none"),
  keyLimits: z
    .object({
      concurrency: z.number().int().nullable(),
      rateLimit: z.object({ count: z.number().int(), intervalMs: z.number().int() }).nullable(),
    })
    .nullable()
    .describe("the queue's default limits per key (GET /v1/queues/{name}/key-limits for overrides); null: no limits per key"),
});

const recentOutcomes = z.object({
  succeeded: z.number().int().describe("attempts that succeeded in the window"),
  failed: z.number().int().describe("attempts that failed, timed out or lost their lease in the window"),
  failureRate: z.number().nullable().describe("failed / (succeeded + failed); null when neither happened"),
});

const overviewJob = { id: z.uuid(), queue: z.string(), kind: z.string(), tenant: z.string() };

/** A ready job (queued or retrying, run time passed) and how long it has waited: the overview's oldest, and each queue's. */
const oldestReadyJob = z.object({ ...overviewJob, ageMs: z.number().int().describe("ms since its run time") });

const overview = z.object({
  at: isoTime.describe("when it was read (database clock)"),
  tenant: z.string().nullable().describe("the tenant it covers; null: all"),
  exactCountLimit: z.number().int().describe("jobs of one queue in one state counted one by one at most; beyond, estimated"),
  windowMs: z.number().int().describe("the recent window of queues[].recent, kinds and topErrors (15 minutes)"),
  queues: z.array(
    z.object({
      queue: z.string(),
      counts: queueCounts,
      estimated: statusEstimated,
      oldestReadyAgeMs: z.number().nullable().describe("ms its oldest ready job has waited; null when none waits (or incomplete lists oldestReady)"),
      paused: z.boolean(),
      recent: recentOutcomes.nullable().describe("its attempts that ended in the window; null when incomplete lists recent"),
      oldestReadyJob: oldestReadyJob.nullable().describe("its ready job that has waited longest; null when none waits (or incomplete lists oldestReady)"),
    }),
  ),
  kinds: z.array(z.object({ kind: z.string(), ...recentOutcomes.shape })).describe("per kind, attempts that ended in the window, by kind name"),
  oldestReadyJob: oldestReadyJob
    .nullable()
    .describe("the ready job (queued or retrying, run time passed) that has waited longest; null when none waits"),
  stuck: z
    .object({
      count: z.number().int().describe("running jobs whose lease expired; exact up to exactCountLimit"),
      estimated: z.boolean().describe("true when there are more than exactCountLimit (count is then that limit)"),
      jobs: z
        .array(z.object({ ...overviewJob, workerId: z.string(), expiredMs: z.number().int().describe("ms since its lease expired") }))
        .describe("the 5 longest expired"),
    })
    .nullable()
    .describe("running jobs past their lease: their worker stopped renewing it; null when incomplete lists stuck"),
  topErrors: z
    .array(
      z.object({
        message: z.string(),
        count: z.number().int(),
        kinds: z.array(z.string()),
        lastSeenAt: isoTime,
      }),
    )
    .describe("the 10 most frequent error messages of failed attempts in the window"),
  workers: z.array(
    z.object({
      id: z.string(),
      hostname: z.string(),
      pid: z.number().int(),
      queues: z.array(z.string()).nullable().describe("null: all queues"),
      concurrency: z.number().int(),
      running: z.number().int().describe("jobs it runs now (a tenant key counts only its own)"),
      lastSeenAt: storedTime,
    }),
  ),
  incomplete: z
    .array(z.enum(["oldestReady", "recent", "stuck"]))
    .describe("parts left out because they did not finish within the search time bound"),
});

const policy = z.enum(DEPENDENCY_POLICIES as readonly DependencyPolicy[] as [DependencyPolicy, ...DependencyPolicy[]]);

const dependencyLink = z.object({
  jobId: z.uuid(),
  kind: z.string(),
  status: z.enum(JOB_STATUSES),
  node: z.string().nullable().describe("its name in its flow; null outside a flow"),
  onFailure: policy.describe("the edge's policy when the dependency ends other than succeeded"),
});

// The serializer writes required members first, then the optional ones in
// this order; HttpProblem.toBody builds bodies in the same order, so a
// problem reads the same whichever writes it.
const problem = z
  .object({
    type: z.literal("about:blank"),
    title: z.string(),
    status: z.number().int(),
    detail: z.string(),
    code: z.string().describe("stable machine-readable code, e.g. VALIDATION, NOT_FOUND, IDEMPOTENCY_CONFLICT, UNIQUE_CONFLICT"),
    instance: z.string().optional(),
    requestId: z.string().optional(),
    errors: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
    jobStatus: z.enum(JOB_STATUSES).optional().describe("ALREADY_TERMINAL: the state the job ended in"),
    idempotencyKey: z.string().optional().describe("IDEMPOTENCY_CONFLICT: the key used before with a different request"),
    flowId: z.uuid().optional().describe("IDEMPOTENCY_CONFLICT on a flow or batch: the flow the key created"),
    uniqueKey: z.string().optional().describe("UNIQUE_CONFLICT: the unique key held"),
    holderId: z.uuid().optional().describe("UNIQUE_CONFLICT: the job holding it"),
    timeoutMs: z.number().int().optional().describe("SEARCH_TIMEOUT: the search time bound, in ms"),
    schemaVersion: z.number().int().optional().describe("GET /readyz: the migration the database schema is at"),
    expectedSchemaVersion: z.number().int().optional().describe("GET /readyz: the migration this Conveyor needs"),
  })
  .describe("RFC 9457 problem details");

/** Response schemas by name, for the routes' `response` maps. */
/** `GET /v1/me`: the API key a request is made with, and what it may do. */
const currentKey = z.object({
  keyId: z.uuid().describe("the API key's id"),
  tenant: z.string().describe("its tenant: a tenant key reads and acts for this tenant only; an admin key's default tenant for writes"),
  admin: z.boolean().describe("true: an admin key, which sees every tenant and may use the admin-only routes (queue settings, limits per key, prune)"),
});

export const responseSchemas = {
  job: responseSchema(job),
  jobWithExecutions: responseSchema(jobDetailShape),
  jobPage: responseSchema(page(job)),
  jobBatch: responseSchema(
    z.object({
      jobs: z.array(job),
      outcomes: z
        .array(z.enum(BATCH_OUTCOMES))
        .describe("per job: created; existing (the job its idempotency key created before); kept or replaced (the job holding its unique key)"),
    }),
  ),
  deadLetter: responseSchema(deadLetterShape),
  deadLetterPage: responseSchema(page(deadLetterShape)),
  queues: responseSchema(z.object({ items: z.array(queueStats) })),
  jobCount: responseSchema(jobCountShape),
  overview: responseSchema(overview),
  workers: responseSchema(z.object({ items: z.array(workerShape) })),
  problem: responseSchema(problem),
  flowPage: responseSchema(page(flowSummaryShape)),
  flowDetail: responseSchema(flowDetailShape),
  flowCreated: responseSchema(
    z.object({
      id: z.uuid(),
      created: z.boolean().describe("false when the idempotency key returned a flow created before"),
      jobs: z.record(z.string(), job).describe("every job by its name (`waiting` when it has dependencies)"),
    }),
  ),
  batchCreated: responseSchema(
    z.object({
      id: z.uuid(),
      created: z.boolean().describe("false when the idempotency key returned a batch created before"),
      jobs: z.array(job).describe("the members, in request order"),
      callback: job,
    }),
  ),
  flowCancelled: responseSchema(
    z.object({
      id: z.uuid(),
      cancelled: z.number().int().describe("jobs cancelled at once (they had not started)"),
      cancelRequested: z.number().int().describe("running jobs asked to stop: told at once, or at their worker's next heartbeat if it only polls"),
    }),
  ),
  jobDependencies: responseSchema(
    z.object({
      jobId: z.uuid(),
      flowId: z.uuid().nullable().describe("the flow or batch the job belongs to; null when none"),
      node: z.string().nullable().describe("its name in that flow"),
      dependencies: z.array(dependencyLink).describe("what the job waits for (its parents)"),
      dependents: z.array(dependencyLink).describe("what waits for it (its children)"),
      counts: z
        .object({ pending: z.number().int(), failed: z.number().int(), blocking: z.number().int() })
        .nullable()
        .describe("its dependencies not ended yet, ended other than succeeded, and of those the ones blocking it; null when it has none"),
    }),
  ),
  bulkAction: responseSchema(bulkActionShape),
  bulkActionPage: responseSchema(page(bulkActionShape)),
  keyLimitSettings: responseSchema(keyLimitSettingsShape),
  keyLimitList: responseSchema(z.object({ items: z.array(keyLimitSettingsShape) })),
  topKeys: responseSchema(z.object({ items: z.array(keyLoadShape) })),
  keyStatus: responseSchema(keyStatusShape),
  schedules: responseSchema(z.object({ items: z.array(scheduleShape) })),
  currentKey: responseSchema(currentKey),
  steps: responseSchema(z.object({ items: z.array(stepShape).describe("in the order the job first recorded them") })),
  sentEvent: responseSchema(sentEventShape),
};

/** The body of `GET /v1/overview` before its times become text (the serializer does the rest). */
export type OverviewResponse = z.input<typeof overview>;

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

/** One problem response with its own description, for a route whose status means something particular. */
export function problemResponse(status: number, description: string): Record<number, unknown> {
  return { [status]: { description, content: { [PROBLEM_CONTENT_TYPE]: { schema: responseSchemas.problem } } } };
}

/** The problems every authenticated route can answer with. */
export const COMMON_PROBLEMS = [401, 503] as const;
