import type { FastifyInstance, FastifyRequest } from "fastify";
import { type EnqueuedJob, type EnqueueOptions, IdempotencyConflictError, UniqueJobConflictError } from "conveyor-jobs";
import { type BatchJobItem, jobJson, traceContextFromHeaders } from "conveyor-jobs/server";
import type { RouteContext } from "../context.js";
import { BEARER_SECURITY, withKindVariants } from "../openapi.js";
import { HttpProblem } from "../problem.js";
import { jsonResponse, problemResponses, responseSchemas } from "../response-schemas.js";
import { type BatchOutcome, batchBody, type CreateJobBody, createJobBody, idempotencyHeaders } from "../schemas.js";
import { writeTenant } from "../tenancy.js";
import { UNIQUE_OUTCOME_HEADER, uniqueConflictProblem } from "../unique-conflict.js";
import { routeSchema, toJsonSchema } from "../validation.js";

/**
 * `POST /v1/jobs` and `POST /v1/jobs/batch`.
 *
 * Idempotency: the same key (per tenant) with the same request answers 200
 * with the job the key first created; with a different request, 409. What
 * "the same request" is belongs to the library (core/idempotency.ts), so the
 * API and `enqueue` agree; this only maps its IdempotencyConflictError.
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
        summary: "enqueue a job (with dependsOn: waiting until every dependency has ended)",
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
      if (body.onDependencyFailure !== undefined && body.dependsOn === undefined) {
        throw new HttpProblem(422, "VALIDATION", "onDependencyFailure applies to dependsOn, which is missing", {
          errors: [{ path: "onDependencyFailure", message: "only with dependsOn" }],
        });
      }
      const key = request.headers["idempotency-key"];
      const options = enqueueOptions(request, body, key);
      let job: EnqueuedJob;
      try {
        job = await conveyor.enqueue(body.kind, body.payload, options);
      } catch (error) {
        if (error instanceof UniqueJobConflictError) throw uniqueConflictProblem(error);
        throw error instanceof IdempotencyConflictError ? keyConflict(error) : error;
      }
      if (job.created) metrics.enqueued.inc({ kind: job.kind, queue: job.queue });
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
      let jobs: EnqueuedJob[];
      try {
        // All or nothing: enqueueMany undoes the rows it inserted when a key refuses the batch.
        jobs = await conveyor.enqueueMany(items);
      } catch (error) {
        if (error instanceof UniqueJobConflictError) throw uniqueConflictProblem(error);
        if (error instanceof IdempotencyConflictError) {
          throw keyConflict(error, items.findIndex((item) => item.idempotencyKey === error.idempotencyKey));
        }
        throw error;
      }
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

function enqueueOptions(request: FastifyRequest, body: CreateJobBody | BatchJobItem, idempotencyKey: string | undefined): Omit<EnqueueOptions, "tx"> {
  return {
    tenant: writeTenant(request, body.tenant),
    queue: body.queue,
    priority: body.priority,
    maxAttempts: body.maxAttempts,
    runAt: body.runAt === undefined ? undefined : new Date(body.runAt),
    delayMs: body.delayMs,
    idempotencyKey,
    unique: body.unique,
    // The caller's W3C trace context, so the job joins the caller's trace; an invalid header is ignored, as the spec says.
    traceContext: traceContextFromHeaders(request.headers.traceparent, request.headers.tracestate),
    ...("dependsOn" in body && body.dependsOn !== undefined ? { dependsOn: body.dependsOn, onDependencyFailure: body.onDependencyFailure } : {}),
    limitKey: body.limitKey,
  };
}

/** A reused idempotency key as 409 problem+json naming the key (and, in a batch, the first item carrying it). */
function keyConflict(error: IdempotencyConflictError, index?: number): HttpProblem {
  const where = index === undefined || index < 0 ? "" : `jobs[${index}]: `;
  return new HttpProblem(409, "IDEMPOTENCY_CONFLICT", `${where}${error.message}`, { extensions: { idempotencyKey: error.idempotencyKey } });
}
