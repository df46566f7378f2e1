import type { FastifyInstance } from "fastify";
import type { z } from "zod";
import type { RouteContext } from "../context.js";
import { BEARER_SECURITY } from "../openapi.js";
import { HttpProblem } from "../problem.js";
import { jsonResponse, problemResponses, responseSchemas } from "../response-schemas.js";
import { idParams, jobListQuery } from "../schemas.js";
import { executionJson, jobJson } from "../../wire/serialize.js";
import { actionScope, readScope } from "../tenancy.js";
import { routeSchema } from "../validation.js";

/** `GET /v1/jobs`, `GET /v1/jobs/{id}`, `POST /v1/jobs/{id}/cancel`. */
export function jobRoutes(app: FastifyInstance, { conveyor }: RouteContext): void {
  app.get<{ Querystring: z.output<typeof jobListQuery> }>(
    "/jobs",
    {
      schema: {
        tags: ["jobs"],
        operationId: "listJobs",
        summary: "list jobs, newest first, with cursor paging",
        security: BEARER_SECURITY,
        querystring: routeSchema(jobListQuery),
        response: { 200: jsonResponse("a page of jobs", responseSchemas.jobPage), ...problemResponses(400, 401, 403, 503) },
      },
    },
    async (request) => {
      const { tenant: requested, ...filter } = request.query;
      const page = await conveyor.listJobs({ ...filter, ...readScope(request, requested) });
      return { items: page.items.map(jobJson), nextCursor: page.nextCursor };
    },
  );

  app.get<{ Params: { id: string } }>(
    "/jobs/:id",
    {
      schema: {
        tags: ["jobs"],
        operationId: "getJob",
        summary: "a job with its executions (one per attempt, oldest first)",
        security: BEARER_SECURITY,
        params: routeSchema(idParams),
        response: { 200: jsonResponse("the job", responseSchemas.jobWithExecutions), ...problemResponses(400, 401, 404, 503) },
      },
    },
    async (request) => {
      const job = await conveyor.getJob(request.params.id, actionScope(request));
      if (!job) throw jobNotFound(request.params.id);
      return { ...jobJson(job), executions: job.executions.map(executionJson) };
    },
  );

  app.post<{ Params: { id: string } }>(
    "/jobs/:id/cancel",
    {
      schema: {
        tags: ["jobs"],
        operationId: "cancelJob",
        summary: "cancel a job: at once when queued or retrying (200), at the next heartbeat when running (202)",
        security: BEARER_SECURITY,
        params: routeSchema(idParams),
        response: {
          200: jsonResponse("cancelled", responseSchemas.job),
          202: jsonResponse("cancellation requested: the running handler's signal aborts at its worker's next heartbeat", responseSchemas.job),
          ...problemResponses(400, 401, 404, 409, 503),
        },
      },
    },
    async (request, reply) => {
      const { outcome, job } = await conveyor.cancel(request.params.id, actionScope(request));
      if (outcome === "already_terminal") {
        throw new HttpProblem(409, "ALREADY_TERMINAL", `job ${job.id} is already ${job.status}; nothing changed`, {
          extensions: { jobStatus: job.status },
        });
      }
      reply.code(outcome === "cancelled" ? 200 : 202);
      return jobJson(job);
    },
  );
}

/** The one answer for a missing job and another tenant's job alike. */
export function jobNotFound(id: string): HttpProblem {
  return new HttpProblem(404, "NOT_FOUND", `job ${id} not found`);
}
