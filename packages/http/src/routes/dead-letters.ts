import type { FastifyInstance } from "fastify";
import type { z } from "zod";
import { deadLetterJson, jobJson } from "conveyor-jobs/server";
import type { RouteContext } from "../context.js";
import { BEARER_SECURITY } from "../openapi.js";
import { HttpProblem } from "../problem.js";
import { jsonResponse, problemResponses, responseSchemas } from "../response-schemas.js";
import { deadLetterListQuery, idParams } from "../schemas.js";
import { actionScope, readScope } from "../tenancy.js";
import { routeSchema } from "../validation.js";

/** The dead-letter queue: list, inspect, requeue (201, the job back in its queue), purge (204). */
export function deadLetterRoutes(app: FastifyInstance, { conveyor }: RouteContext): void {
  const tags = ["dead letters"];
  const params = routeSchema(idParams);

  app.get<{ Querystring: z.output<typeof deadLetterListQuery> }>(
    "/dead-letters",
    {
      schema: {
        tags,
        operationId: "listDeadLetters",
        summary: "list dead letters, newest first, with cursor paging",
        security: BEARER_SECURITY,
        querystring: routeSchema(deadLetterListQuery),
        response: { 200: jsonResponse("a page of dead letters", responseSchemas.deadLetterPage), ...problemResponses(400, 401, 403, 503) },
      },
    },
    async (request) => {
      const { tenant: requested, ...filter } = request.query;
      const page = await conveyor.deadLetters.list({ ...filter, ...readScope(request, requested) });
      return { items: page.items.map(deadLetterJson), nextCursor: page.nextCursor };
    },
  );

  app.get<{ Params: { id: string } }>(
    "/dead-letters/:id",
    {
      schema: {
        tags,
        operationId: "getDeadLetter",
        summary: "a dead letter with the job's whole execution history",
        security: BEARER_SECURITY,
        params,
        response: { 200: jsonResponse("the dead letter", responseSchemas.deadLetter), ...problemResponses(400, 401, 404, 503) },
      },
    },
    async (request) => {
      const entry = await conveyor.deadLetters.get(request.params.id, actionScope(request));
      if (!entry) throw deadLetterNotFound(request.params.id);
      return deadLetterJson(entry);
    },
  );

  app.post<{ Params: { id: string } }>(
    "/dead-letters/:id/requeue",
    {
      schema: {
        tags,
        operationId: "requeueDeadLetter",
        summary: "put the job back in its queue with fresh attempts (same job id, history kept)",
        security: BEARER_SECURITY,
        params,
        response: { 201: jsonResponse("the job, queued again", responseSchemas.job), ...problemResponses(400, 401, 404, 503) },
      },
    },
    async (request, reply) => {
      const job = await conveyor.deadLetters.requeue(request.params.id, actionScope(request));
      reply.code(201).header("location", `/v1/jobs/${job.id}`);
      return jobJson(job);
    },
  );

  app.delete<{ Params: { id: string } }>(
    "/dead-letters/:id",
    {
      schema: {
        tags,
        operationId: "purgeDeadLetter",
        summary: "delete the dead letter and its job, with the history, for good",
        security: BEARER_SECURITY,
        params,
        response: { 204: { description: "purged", type: "null" }, ...problemResponses(400, 401, 404, 503) },
      },
    },
    async (request, reply) => {
      await conveyor.deadLetters.purge(request.params.id, actionScope(request));
      reply.code(204); // no body: Fastify sends an empty 204 for an undefined result
      return undefined;
    },
  );
}

function deadLetterNotFound(id: string): HttpProblem {
  return new HttpProblem(404, "NOT_FOUND", `dead letter ${id} not found`);
}
