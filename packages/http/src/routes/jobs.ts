import type { FastifyInstance } from "fastify";
import type { z } from "zod";
import { jobCountJson, jobDetailJson, jobJson, toJobFilter } from "conveyor-jobs/server";
import type { RouteContext } from "../context.js";
import { BEARER_SECURITY } from "../openapi.js";
import { HttpProblem } from "../problem.js";
import { jsonResponse, problemResponse, problemResponses, responseSchemas } from "../response-schemas.js";
import { idParams, jobCountQuery, jobListQuery } from "../schemas.js";
import { actionScope, readScope } from "../tenancy.js";
import { routeSchema } from "../validation.js";

const SEARCH_TIMEOUT = problemResponse(
  422,
  "SEARCH_TIMEOUT: the search did not finish within the time bound (a filter no index serves, such as error text alone); narrow it by queue, kind, status or a time range. VALIDATION: a value the database refused",
);

/** `GET /v1/jobs`, `GET /v1/jobs/count`, `GET /v1/jobs/{id}`, `POST /v1/jobs/{id}/cancel`. */
export function jobRoutes(app: FastifyInstance, { conveyor }: RouteContext): void {
  app.get<{ Querystring: z.output<typeof jobListQuery> }>(
    "/jobs",
    {
      schema: {
        tags: ["jobs"],
        operationId: "listJobs",
        summary: "search jobs, newest first, with cursor paging: every filter given must match",
        security: BEARER_SECURITY,
        querystring: routeSchema(jobListQuery),
        response: { 200: jsonResponse("a page of jobs", responseSchemas.jobPage), ...problemResponses(400, 401, 403, 503), ...SEARCH_TIMEOUT },
      },
    },
    async (request) => {
      const { tenant: requested, limit, cursor, ...filter } = request.query;
      const page = await conveyor.listJobs({ ...toJobFilter(filter), ...readScope(request, requested), limit, cursor });
      return { items: page.items.map(jobJson), nextCursor: page.nextCursor };
    },
  );

  app.get<{ Querystring: z.output<typeof jobCountQuery> }>(
    "/jobs/count",
    {
      schema: {
        tags: ["jobs"],
        operationId: "countJobs",
        summary: "how many jobs match a search (the filters of GET /v1/jobs): exact up to 10,000, the planner's estimate beyond",
        security: BEARER_SECURITY,
        querystring: routeSchema(jobCountQuery),
        response: { 200: jsonResponse("the count", responseSchemas.jobCount), ...problemResponses(400, 401, 403, 503), ...SEARCH_TIMEOUT },
      },
    },
    async (request) => {
      const { tenant: requested, ...filter } = request.query;
      return jobCountJson(await conveyor.countJobs({ ...toJobFilter(filter), ...readScope(request, requested) }));
    },
  );

  app.get<{ Params: { id: string } }>(
    "/jobs/:id",
    {
      schema: {
        tags: ["jobs"],
        operationId: "getJob",
        summary: "a job with its executions (one per attempt, oldest first) and its requeues (each requeue, bulk retry, resume and rerun, oldest first)",
        security: BEARER_SECURITY,
        params: routeSchema(idParams),
        response: { 200: jsonResponse("the job", responseSchemas.jobWithExecutions), ...problemResponses(400, 401, 404, 503) },
      },
    },
    async (request) => {
      const job = await conveyor.getJob(request.params.id, actionScope(request));
      if (!job) throw jobNotFound(request.params.id);
      return jobDetailJson(job);
    },
  );

  app.post<{ Params: { id: string } }>(
    "/jobs/:id/cancel",
    {
      schema: {
        tags: ["jobs"],
        operationId: "cancelJob",
        summary: "cancel a job: at once when waiting, queued, retrying or sleeping (200), its handler told at once when running (202)",
        security: BEARER_SECURITY,
        params: routeSchema(idParams),
        response: {
          200: jsonResponse("cancelled", responseSchemas.job),
          202: jsonResponse("cancellation requested: the running handler's signal aborts at once through its worker's LISTEN connection, or at its next heartbeat for a worker that only polls", responseSchemas.job),
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
