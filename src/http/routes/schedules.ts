import type { FastifyInstance } from "fastify";
import { z } from "zod";
import type { RouteContext } from "../context.js";
import { BEARER_SECURITY } from "../openapi.js";
import { jsonResponse, problemResponses } from "../response-schemas.js";
import { scheduleJson } from "../../wire/schedule-json.js";
import { tenantQuery } from "../schemas.js";
import { readScope } from "../tenancy.js";
import { routeSchema, toJsonSchema } from "../validation.js";

const isoTime = z.iso.datetime({ offset: true });

const schedule = z.object({
  name: z.string(),
  kind: z.string(),
  cron: z.string().describe("5 fields, or 6 with seconds first"),
  timezone: z.string().describe("IANA time zone the fields are read in"),
  tenant: z.string(),
  queue: z.string(),
  priority: z.number().int(),
  payload: z.unknown().describe("the payload of every tick's job"),
  missed: z.object({
    policy: z.enum(["skip", "catch-up"]).describe("skip: only the latest missed tick; catch-up: the latest `limit`"),
    limit: z.number().int(),
  }),
  nextTickAt: isoTime.nullable().describe("the first tick not yet enqueued (in the past: overdue, no worker ran it since); null: never fires again"),
  lastTickAt: isoTime.nullable().describe("the newest tick enqueued; null until the first"),
  createdAt: isoTime,
  updatedAt: isoTime.describe("when the definition last changed"),
});

const schedulesResponse = toJsonSchema(z.object({ items: z.array(schedule) }));

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
        response: { 200: jsonResponse("every stored schedule, by name", schedulesResponse), ...problemResponses(400, 401, 403, 503) },
      },
    },
    async (request) => ({ items: (await conveyor.listSchedules(readScope(request, request.query.tenant))).map(scheduleJson) }),
  );
}
