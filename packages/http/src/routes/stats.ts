import type { FastifyInstance } from "fastify";
import { z } from "zod";
import type { RouteContext } from "../context.js";
import { BEARER_SECURITY } from "../openapi.js";
import { jsonResponse, problemResponses } from "../response-schemas.js";
import { throughputQuery } from "../schemas.js";
import { readScope } from "../tenancy.js";
import { responseSchema, routeSchema } from "../validation.js";

const throughputResponse = responseSchema(
  z.object({
    minutes: z.array(
      z.object({
        minute: z.iso.datetime({ offset: true }).describe("start of the minute"),
        enqueued: z.number().int().describe("jobs created in that minute"),
        succeeded: z.number().int().describe("attempts that succeeded in that minute"),
        failed: z.number().int().describe("attempts that failed, timed out or lost their lease in that minute"),
      }),
    ),
  }),
);

const throughputSchema = {
  hide: true,
  tags: ["operations"],
  operationId: "getThroughput",
  summary: "jobs enqueued and attempts finished per minute over the last hour (oldest first), of every queue or one",
  security: BEARER_SECURITY,
  querystring: routeSchema(throughputQuery),
  response: { 200: jsonResponse("60 minutes", throughputResponse), ...problemResponses(400, 401, 403, 422, 503) },
};

/**
 * The routes the OpenAPI document leaves out because they serve only the
 * dashboard, as OpenAPI path items from their route schemas, so the
 * dashboard's generated API types (scripts/openapi-types.mjs) cover them
 * too. Not served anywhere.
 */
export const dashboardOnlyPaths = {
  "/v1/stats/throughput": {
    get: {
      operationId: throughputSchema.operationId,
      summary: throughputSchema.summary,
      responses: throughputSchema.response,
    },
  },
};

/**
 * `GET /v1/stats/throughput`: jobs per minute over the last hour (of one
 * queue with `?queue=`), for the dashboard's charts. Hidden from the
 * OpenAPI document: it serves the dashboard and may change with it.
 */
export function statsRoutes(app: FastifyInstance, { conveyor }: RouteContext): void {
  const throughput = conveyor.throughput;
  app.get<{ Querystring: z.output<typeof throughputQuery> }>("/stats/throughput", { schema: throughputSchema }, async (request) => {
    const minutes = await throughput.lastHour({ ...readScope(request, request.query.tenant), queue: request.query.queue ?? null });
    return { minutes: minutes.map((entry) => ({ ...entry, minute: entry.minute.toISOString() })) };
  });
}
