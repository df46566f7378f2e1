import type { FastifyInstance, FastifyRequest } from "fastify";
import type { EnqueueOptions } from "../../client/enqueue.js";
import type { EnqueuedJob } from "../../client/enqueued-job.js";
import { ConflictError, UniqueJobConflictError } from "../../core/errors.js";
import { withTransaction } from "../../store/transaction.js";
import type { RouteContext } from "../context.js";
import { BEARER_SECURITY, withKindVariants } from "../openapi.js";
import { HttpProblem } from "../problem.js";
import { jsonResponse, problemResponses, responseSchemas } from "../response-schemas.js";
import { type BatchOutcome, batchBody, type CreateJobBody, createJobBody, idempotencyHeaders } from "../schemas.js";
import type { BatchJobItem } from "../../wire/job-request.js";
import { jobJson } from "../../wire/serialize.js";
import { writeTenant } from "../tenancy.js";
import { UNIQUE_OUTCOME_HEADER, uniqueConflictProblem } from "../unique-conflict.js";
import { routeSchema, toJsonSchema } from "../validation.js";

/**
 * `POST /v1/jobs` and `POST /v1/jobs/batch`.
 *
 * Idempotency: the same key (per tenant) with the same request answers 200
 * with the job the key first created; with a different request, 409. The
 * request is the same when kind, payload (as the kind's schema parsed it),
 * queue, priority and maxAttempts match. runAt and delayMs are not
 * compared: a retried "in 5 minutes" names a different instant, and a job's
 * run_at moves as it is retried.
 *
 * Unique jobs (`unique` in the body): 201 when the job was created, 200 with
 * the holder when the key was held (kept or replaced, said by the
 * Conveyor-Unique-Outcome header), 409 UNIQUE_CONFLICT for onConflict "drop".
 * An idempotency key that names a job answers first, as above.
 */
export function jobCreateRoutes(app: FastifyInstance, { conveyor, metrics, kinds }: RouteContext): void {
  const createDoc = withKindVariants(toJsonSchema(createJobBody), kinds);
  const batchDoc = toJsonSchema(batchBody) as { properties: { jobs: { items: Record<string, unknown> } } };
  batchDoc.properties.jobs.items = withKindVariants(batchDoc.properties.jobs.items, kinds);

  app.post<{ Body: CreateJobBody; Headers: { "idempotency-key"?: string } }>(
    "/jobs",
    {
      schema: {
        tags: ["jobs"],
        operationId: "createJob",
        summary: "enqueue a job",
        security: BEARER_SECURITY,
        headers: routeSchema(idempotencyHeaders),
        body: routeSchema(createJobBody, createDoc),
        response: {
          201: jsonResponse("created", responseSchemas.job),
          200: jsonResponse("the job this idempotency key created before, or the job holding the unique key", responseSchemas.job),
          ...problemResponses(400, 401, 403, 409, 413, 415, 422, 503),
        },
      },
    },
    async (request, reply) => {
      const body = request.body;
      const key = request.headers["idempotency-key"];
      const options = enqueueOptions(request, body, key);
      let job: EnqueuedJob;
      try {
        job = await conveyor.enqueue(body.kind, body.payload, options);
      } catch (error) {
        if (error instanceof UniqueJobConflictError) throw uniqueConflictProblem(error);
        throw error instanceof ConflictError && key !== undefined ? keyConflict(key, error.message) : error;
      }
      if (job.created) metrics.enqueued.inc({ kind: job.kind, queue: job.queue });
      else if (job.unique === undefined) checkSameRequest(conveyor.jobs.get(body.kind)!, body, job, key!);
      if (job.unique !== undefined) reply.header(UNIQUE_OUTCOME_HEADER, job.unique);
      reply.code(job.created ? 201 : 200);
      if (job.created) reply.header("location", `/v1/jobs/${job.id}`);
      return jobJson(job);
    },
  );

  app.post<{ Body: { jobs: BatchJobItem[] } }>(
    "/jobs/batch",
    {
      schema: {
        tags: ["jobs"],
        operationId: "createJobBatch",
        summary: "enqueue up to MAX_BATCH_JOBS jobs, all or nothing",
        security: BEARER_SECURITY,
        body: routeSchema(batchBody, batchDoc as Record<string, unknown>),
        response: {
          201: jsonResponse(
            "every job, in request order (jobs an idempotency key had created, and jobs holding a unique key, are returned as they are)",
            responseSchemas.jobBatch,
          ),
          ...problemResponses(400, 401, 403, 409, 413, 415, 422, 503),
        },
      },
    },
    async (request, reply) => {
      if (request.headers["idempotency-key"] !== undefined) {
        // Silently ignoring it would let a client believe its retries are safe.
        throw new HttpProblem(400, "INVALID_PARAMETER", "Idempotency-Key is not used on batches: give each job its own idempotencyKey", {
          errors: [{ path: "idempotency-key", message: "not used on batches" }],
        });
      }
      const items = request.body.jobs.map((item) => ({
        job: item.kind,
        payload: item.payload,
        ...enqueueOptions(request, item, item.idempotencyKey),
      }));
      // One transaction: a key that answers with a different request must undo the rows already inserted.
      const jobs = await withTransaction(conveyor.pool, async (client) => {
        let inserted: EnqueuedJob[];
        try {
          inserted = await conveyor.enqueueMany(items, { tx: client });
        } catch (error) {
          if (error instanceof UniqueJobConflictError) throw uniqueConflictProblem(error);
          throw error instanceof ConflictError ? keyConflict("", error.message) : error;
        }
        inserted.forEach((job, i) => {
          const item = request.body.jobs[i]!;
          if (!job.created && job.unique === undefined) checkSameRequest(conveyor.jobs.get(item.kind)!, item, job, item.idempotencyKey!, i);
        });
        return inserted;
      });
      for (const job of jobs) if (job.created) metrics.enqueued.inc({ kind: job.kind, queue: job.queue });
      reply.code(201);
      return { jobs: jobs.map(jobJson), outcomes: jobs.map(batchOutcome) };
    },
  );
}

/**
 * What the batch did for one item, as the single-job route says with its
 * status code and Conveyor-Unique-Outcome header: a unique key's outcome,
 * else "created", or "existing" for the job an idempotency key created before.
 */
function batchOutcome(job: EnqueuedJob): BatchOutcome {
  return job.unique ?? (job.created ? "created" : "existing");
}

function enqueueOptions(request: FastifyRequest, body: CreateJobBody, idempotencyKey: string | undefined): Omit<EnqueueOptions, "tx"> {
  return {
    tenant: writeTenant(request, body.tenant),
    queue: body.queue,
    priority: body.priority,
    maxAttempts: body.maxAttempts,
    runAt: body.runAt === undefined ? undefined : new Date(body.runAt),
    delayMs: body.delayMs,
    idempotencyKey,
    unique: body.unique,
  };
}

/** An existing job returned for an idempotency key must have been created by the same request. */
function checkSameRequest(
  definition: { queue: string; priority: number; maxAttempts: number },
  body: CreateJobBody,
  job: EnqueuedJob,
  key: string,
  index?: number,
): void {
  const differences = [
    ["queue", body.queue ?? definition.queue, job.queue],
    ["priority", body.priority ?? definition.priority, job.priority],
    ["maxAttempts", body.maxAttempts ?? definition.maxAttempts, job.maxAttempts],
  ].filter(([, requested, stored]) => requested !== stored);
  if (differences.length === 0) return;
  const where = index === undefined ? "" : `jobs[${index}]: `;
  const fields = differences.map(([field]) => field).join(", ");
  throw keyConflict(key, `${where}idempotency key ${JSON.stringify(key)} was already used for job ${job.id} with a different ${fields}`);
}

function keyConflict(key: string, detail: string): HttpProblem {
  return new HttpProblem(409, "IDEMPOTENCY_CONFLICT", detail, key ? { extensions: { idempotencyKey: key } } : {});
}
