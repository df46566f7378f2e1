import type { FastifyInstance } from "fastify";
import type { z } from "zod";
import { scheduleJson } from "conveyor-jobs/server";
import type { RouteContext } from "../context.js";
import { BEARER_SECURITY } from "../openapi.js";
import { jsonResponse, problemResponses, responseSchemas } from "../response-schemas.js";
import { tenantQuery } from "../schemas.js";
import { readScope } from "../tenancy.js";
import { routeSchema } from "../validation.js";

/** `GET /v1/schedules`: the cron schedules workers have stored, by name. */
export function scheduleRoutes(app: FastifyInstance, { conveyor }: RouteContext): void {
  app.get<{ Querystring: z.output<typeof tenantQuery> }>(
    "/schedules",
    {
      schema: {
        tags: ["operations"],
        operationId: "listSchedules",
        summary: "cron schedules with their next and last tick (a tenant key sees its own tenant's)",
        security: BEARER_SECURITY,
        querystring: routeSchema(tenantQuery),
        response: { 200: jsonResponse("every stored schedule, by name", responseSchemas.schedules), ...problemResponses(400, 401, 403, 503) },
      },
    },
    async (request) => ({ items: (await conveyor.listSchedules(readScope(request, request.query.tenant))).map(scheduleJson) }),
  );
}
