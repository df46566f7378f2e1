import type { FastifyInstance, FastifyRequest } from "fastify";
import type { z } from "zod";
import { type BatchMember, type FlowDependency, FlowIdempotencyConflictError, type FlowJob, type Job } from "conveyor-jobs";
import {
  type BatchFlowBody,
  batchFlowBody,
  type FlowBody,
  flowBody,
  flowDetailJson,
  type FlowJobItem,
  flowSummaryJson,
  jobJson,
  traceContextFromHeaders,
} from "conveyor-jobs/server";
import type { RouteContext } from "../context.js";
import { BEARER_SECURITY, withKindVariants } from "../openapi.js";
import { HttpProblem } from "../problem.js";
import { jsonResponse, problemResponses, responseSchemas } from "../response-schemas.js";
import { flowIdempotencyHeaders, flowListQuery, idParams } from "../schemas.js";
import { actionScope, readScope, writeTenant } from "../tenancy.js";
import { routeSchema, toJsonSchema } from "../validation.js";
import { jobNotFound } from "./jobs.js";

/**
 * Flows (graphs of jobs enqueued together) and batches (members and a
 * callback): create, list, inspect, cancel; and a job's dependency links.
 * The graph rules (cycles, unknown names, missing or another tenant's
 * dependencies) are the library's: its ValidationError answers 422 naming
 * the path, as for any body that breaks a rule.
 *
 * Idempotency: `idempotencyKey` in the body, or the `Idempotency-Key`
 * header (both: they must agree). The same key with the same request
 * answers 200 with the flow it first created (`created: false`); with a
 * different request, 409 IDEMPOTENCY_CONFLICT.
 */
export function flowRoutes(app: FastifyInstance, { conveyor, metrics, kinds }: RouteContext): void {
  const tags = ["flows"];
  const params = routeSchema(idParams);
  const headers = routeSchema(flowIdempotencyHeaders);
  // Each job names its kind: the document pairs each kind with its payload schema, as for POST /v1/jobs.
  const flowDoc = toJsonSchema(flowBody) as { properties: { jobs: { additionalProperties: Record<string, unknown> } } };
  flowDoc.properties.jobs.additionalProperties = withKindVariants(flowDoc.properties.jobs.additionalProperties, kinds);
  const batchDoc = toJsonSchema(batchFlowBody) as { properties: { jobs: { items: Record<string, unknown> }; callback: Record<string, unknown> } };
  batchDoc.properties.jobs.items = withKindVariants(batchDoc.properties.jobs.items, kinds);
  batchDoc.properties.callback = withKindVariants(batchDoc.properties.callback, kinds);
  const counted = (jobs: readonly Job[]) => {
    for (const job of jobs) metrics.enqueued.inc({ kind: job.kind, queue: job.queue });
  };

  app.post<{ Body: FlowBody }>(
    "/flows",
    {
      schema: {
        tags,
        operationId: "createFlow",
        summary: "enqueue a graph of jobs in one transaction: each names the jobs it waits for",
        security: BEARER_SECURITY,
        headers,
        body: routeSchema(flowBody, flowDoc as Record<string, unknown>),
        response: {
          201: jsonResponse("created: the flow's id and every job by name", responseSchemas.flowCreated),
          200: jsonResponse("the flow this idempotency key created before", responseSchemas.flowCreated),
          ...problemResponses(400, 401, 403, 409, 413, 415, 422, 503),
        },
      },
    },
    async (request, reply) => {
      const body = request.body;
      const jobs: Record<string, FlowJob> = {};
      for (const [name, item] of Object.entries(body.jobs)) jobs[name] = flowJobOf(item);
      const idempotencyKey = keyOf(request, body.idempotencyKey);
      const flow = await withKeyConflict(() =>
        conveyor.flows.enqueue({
          jobs,
          name: body.name,
          idempotencyKey,
          tenant: writeTenant(request, body.tenant),
          traceContext: traceContextFromHeaders(request.headers.traceparent, request.headers.tracestate),
        }),
      );
      if (flow.created) {
        counted(Object.values(flow.jobs));
        reply.header("location", `/v1/flows/${flow.id}`);
      }
      reply.code(flow.created ? 201 : 200);
      return { id: flow.id, created: flow.created, jobs: Object.fromEntries(Object.entries(flow.jobs).map(([name, job]) => [name, jobJson(job)])) };
    },
  );

  app.post<{ Body: BatchFlowBody }>(
    "/batches",
    {
      schema: {
        tags,
        operationId: "createBatch",
        summary: "enqueue a batch: its members at once, and a callback released once every member has ended",
        security: BEARER_SECURITY,
        headers,
        body: routeSchema(batchFlowBody, batchDoc as Record<string, unknown>),
        response: {
          201: jsonResponse("created: the batch's id, its members in request order, and the callback", responseSchemas.batchCreated),
          200: jsonResponse("the batch this idempotency key created before", responseSchemas.batchCreated),
          ...problemResponses(400, 401, 403, 409, 413, 415, 422, 503),
        },
      },
    },
    async (request, reply) => {
      const body = request.body;
      const { when, ...callback } = body.callback;
      const batch = await withKeyConflict(() =>
        conveyor.flows.enqueueBatch({
          jobs: body.jobs.map(memberOf),
          callback: { ...memberOf(callback), when },
          name: body.name,
          idempotencyKey: keyOf(request, body.idempotencyKey),
          tenant: writeTenant(request, body.tenant),
          traceContext: traceContextFromHeaders(request.headers.traceparent, request.headers.tracestate),
        }),
      );
      if (batch.created) {
        counted([...batch.jobs, batch.callback]);
        reply.header("location", `/v1/flows/${batch.id}`);
      }
      reply.code(batch.created ? 201 : 200);
      return { id: batch.id, created: batch.created, jobs: batch.jobs.map(jobJson), callback: jobJson(batch.callback) };
    },
  );

  app.get<{ Querystring: z.output<typeof flowListQuery> }>(
    "/flows",
    {
      schema: {
        tags,
        operationId: "listFlows",
        summary: "list flows and batches, newest first, each with its jobs counted by status, with cursor paging",
        security: BEARER_SECURITY,
        querystring: routeSchema(flowListQuery),
        response: { 200: jsonResponse("a page of flows", responseSchemas.flowPage), ...problemResponses(400, 401, 403, 503) },
      },
    },
    async (request) => {
      const { tenant: requested, ...filter } = request.query;
      const page = await conveyor.flows.list({ ...filter, ...readScope(request, requested) });
      return { items: page.items.map(flowSummaryJson), nextCursor: page.nextCursor };
    },
  );

  app.get<{ Params: { id: string } }>(
    "/flows/:id",
    {
      schema: {
        tags,
        operationId: "getFlow",
        summary: "a flow or batch with every job, what each waits for, and the jobs' counts by status",
        security: BEARER_SECURITY,
        params,
        response: { 200: jsonResponse("the flow", responseSchemas.flowDetail), ...problemResponses(400, 401, 404, 503) },
      },
    },
    async (request) => {
      const flow = await conveyor.flows.get(request.params.id, actionScope(request));
      if (!flow) throw flowNotFound(request.params.id);
      return flowDetailJson(flow);
    },
  );

  app.post<{ Params: { id: string } }>(
    "/flows/:id/cancel",
    {
      schema: {
        tags,
        operationId: "cancelFlow",
        summary: "cancel a flow or batch: jobs not started are cancelled at once, running ones told at once",
        security: BEARER_SECURITY,
        params,
        response: { 200: jsonResponse("what was cancelled", responseSchemas.flowCancelled), ...problemResponses(400, 401, 404, 503) },
      },
    },
    async (request) => {
      // A missing flow (or another tenant's) is the library's NotFoundError: 404 "flow … not found", as GET says.
      const done = await conveyor.flows.cancel(request.params.id, actionScope(request));
      return { id: request.params.id, ...done };
    },
  );

  app.get<{ Params: { id: string } }>(
    "/jobs/:id/dependencies",
    {
      schema: {
        tags: ["jobs"],
        operationId: "getJobDependencies",
        summary: "what a job waits for (parents) and what waits for it (children), its flow and its dependency counts",
        security: BEARER_SECURITY,
        params,
        response: { 200: jsonResponse("the job's dependency links", responseSchemas.jobDependencies), ...problemResponses(400, 401, 404, 503) },
      },
    },
    async (request) => {
      const found = await conveyor.flows.getJobDependencies(request.params.id, actionScope(request));
      if (!found) throw jobNotFound(request.params.id);
      return { jobId: request.params.id, ...found };
    },
  );
}

/** The one answer for a missing flow and another tenant's flow alike. */
function flowNotFound(id: string): HttpProblem {
  return new HttpProblem(404, "NOT_FOUND", `flow ${id} not found`);
}

function flowJobOf(item: FlowJobItem): FlowJob {
  return { ...memberOf(item), dependsOn: item.dependsOn as FlowDependency[] | undefined, onDependencyFailure: item.onDependencyFailure };
}

/** A batch's member or callback: a job without dependencies of its own (the batch makes the callback's). */
function memberOf(item: Omit<FlowJobItem, "dependsOn" | "onDependencyFailure">): BatchMember {
  return {
    job: item.kind,
    payload: item.payload,
    queue: item.queue,
    priority: item.priority,
    maxAttempts: item.maxAttempts,
    runAt: item.runAt === undefined ? undefined : new Date(item.runAt),
    delayMs: item.delayMs,
  };
}

/** The idempotency key from the body or the header; refused when both are given and differ. */
function keyOf(request: FastifyRequest, fromBody: string | undefined): string | undefined {
  const fromHeader = request.headers["idempotency-key"] as string | undefined;
  if (fromBody !== undefined && fromHeader !== undefined && fromBody !== fromHeader) {
    throw new HttpProblem(400, "INVALID_PARAMETER", "the Idempotency-Key header and the body's idempotencyKey differ: give one", {
      errors: [{ path: "idempotency-key", message: "differs from idempotencyKey" }],
    });
  }
  return fromBody ?? fromHeader;
}

/** A reused idempotency key with a different request, as 409 naming the key and the flow it names. */
async function withKeyConflict<T>(enqueue: () => Promise<T>): Promise<T> {
  try {
    return await enqueue();
  } catch (error) {
    if (error instanceof FlowIdempotencyConflictError) {
      throw new HttpProblem(409, "IDEMPOTENCY_CONFLICT", error.message, { extensions: { idempotencyKey: error.idempotencyKey, flowId: error.flowId } });
    }
    throw error;
  }
}
