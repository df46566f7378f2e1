import type { FastifyInstance } from "fastify";
import type { z } from "zod";
import { bulkActionJson, toJobFilter } from "conveyor-jobs/server";
import { principalOf } from "../auth.js";
import { bulkActionBody, bulkActionListQuery } from "../bulk-action-schemas.js";
import type { RouteContext } from "../context.js";
import { BEARER_SECURITY } from "../openapi.js";
import { HttpProblem } from "../problem.js";
import { jsonResponse, problemResponses, responseSchemas } from "../response-schemas.js";
import { idParams } from "../schemas.js";
import { actionScope, readScope } from "../tenancy.js";
import { routeSchema } from "../validation.js";

/**
 * Bulk actions: one request names a filter and an action; the server does
 * the work in batches and keeps the operation as the record, with its
 * progress. A tenant key acts on its own tenant's jobs only (a filter naming
 * another tenant is refused with 403) and sees and cancels only its own
 * tenant's operations (another's answers 404, as a missing one).
 */
export function bulkActionRoutes(app: FastifyInstance, { conveyor }: RouteContext): void {
  const tags = ["bulk actions"];
  const params = routeSchema(idParams);

  app.post<{ Body: z.output<typeof bulkActionBody> }>(
    "/bulk-actions",
    {
      schema: {
        tags,
        operationId: "startBulkAction",
        summary: "act on every job a filter selects (retry, cancel, purge, set_priority, move), in batches on the server",
        security: BEARER_SECURITY,
        body: routeSchema(bulkActionBody),
        response: {
          202: jsonResponse("started: the operation, running; follow it at its Location", responseSchemas.bulkAction),
          ...problemResponses(400, 401, 403, 413, 415, 422, 503),
        },
      },
    },
    async (request, reply) => {
      const { filter, ...rest } = request.body;
      const scope = readScope(request, filter.tenant);
      const operation = await conveyor.bulkActions.start({ ...rest, filter: toJobFilter(filter), requestedBy: principalOf(request).keyId }, scope);
      reply.code(202).header("location", `/v1/bulk-actions/${operation.id}`);
      return bulkActionJson(operation);
    },
  );

  app.get<{ Querystring: z.output<typeof bulkActionListQuery> }>(
    "/bulk-actions",
    {
      schema: {
        tags,
        operationId: "listBulkActions",
        summary: "bulk action operations, newest first, with cursor paging",
        security: BEARER_SECURITY,
        querystring: routeSchema(bulkActionListQuery),
        response: { 200: jsonResponse("a page of operations", responseSchemas.bulkActionPage), ...problemResponses(400, 401, 403, 503) },
      },
    },
    async (request) => {
      const { tenant, ...paging } = request.query;
      const page = await conveyor.bulkActions.list({ ...paging, ...readScope(request, tenant) });
      return { items: page.items.map(bulkActionJson), nextCursor: page.nextCursor };
    },
  );

  app.get<{ Params: { id: string } }>(
    "/bulk-actions/:id",
    {
      schema: {
        tags,
        operationId: "getBulkAction",
        summary: "one operation: what was asked, by whom, and how far it got",
        security: BEARER_SECURITY,
        params,
        response: { 200: jsonResponse("the operation", responseSchemas.bulkAction), ...problemResponses(400, 401, 404, 503) },
      },
    },
    async (request) => {
      const operation = await conveyor.bulkActions.get(request.params.id, actionScope(request));
      if (!operation) throw new HttpProblem(404, "NOT_FOUND", `bulk action ${request.params.id} not found`);
      return bulkActionJson(operation);
    },
  );

  app.post<{ Params: { id: string } }>(
    "/bulk-actions/:id/cancel",
    {
      schema: {
        tags,
        operationId: "cancelBulkAction",
        summary: "stop an operation before its next batch; what it touched so far stays done",
        security: BEARER_SECURITY,
        params,
        response: {
          202: jsonResponse("cancellation requested: the operation ends cancelled after the batch in progress", responseSchemas.bulkAction),
          200: jsonResponse("cancelled now: no process was running it", responseSchemas.bulkAction),
          ...problemResponses(400, 401, 404, 409, 503),
        },
      },
    },
    async (request, reply) => {
      const operation = await conveyor.bulkActions.cancel(request.params.id, actionScope(request));
      reply.code(operation.status === "running" ? 202 : 200);
      return bulkActionJson(operation);
    },
  );
}
