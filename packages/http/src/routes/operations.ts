import type { FastifyInstance } from "fastify";
import type { z } from "zod";
import type { Overview } from "conveyor-jobs";
import { isoOrNull, workerJson } from "conveyor-jobs/server";
import type { RouteContext } from "../context.js";
import { BEARER_SECURITY } from "../openapi.js";
import { jsonResponse, type OverviewResponse, problemResponses, responseSchemas } from "../response-schemas.js";
import { tenantQuery } from "../schemas.js";
import { actionScope, readScope } from "../tenancy.js";
import { principalOf } from "../auth.js";
import { routeSchema } from "../validation.js";

/** `GET /v1/me`, `GET /v1/overview`, `GET /v1/queues` and `GET /v1/workers`. */
export function operationRoutes(app: FastifyInstance, { conveyor, overview }: RouteContext): void {
  app.get(
    "/me",
    {
      schema: {
        tags: ["operations"],
        operationId: "getCurrentKey",
        summary: "the API key this request is made with: its id, its tenant and whether it is an admin key (what a client may show or call)",
        security: BEARER_SECURITY,
        response: { 200: jsonResponse("the calling key", responseSchemas.currentKey), ...problemResponses(401, 503) },
      },
    },
    async (request) => {
      const { keyId, tenant, admin } = principalOf(request);
      return { keyId, tenant, admin };
    },
  );

  app.get<{ Querystring: z.output<typeof tenantQuery> }>(
    "/overview",
    {
      schema: {
        tags: ["operations"],
        operationId: "getOverview",
        summary:
          "at a glance: per queue its jobs by state and recent failure rate, per kind the same, the oldest ready job, jobs past their lease, top errors and workers' load",
        security: BEARER_SECURITY,
        querystring: routeSchema(tenantQuery),
        response: { 200: jsonResponse("the overview (a tenant key sees its own tenant's)", responseSchemas.overview), ...problemResponses(400, 401, 403, 503) },
      },
    },
    async (request) => overviewTimes(await conveyor.overview(readScope(request, request.query.tenant))),
  );

  app.get<{ Querystring: z.output<typeof tenantQuery> }>(
    "/queues",
    {
      schema: {
        tags: ["operations"],
        operationId: "listQueues",
        summary: "per queue: jobs by status (exact up to 1,000 per status, estimated beyond; see estimated) and the age of the oldest ready job",
        security: BEARER_SECURITY,
        querystring: routeSchema(tenantQuery),
        response: { 200: jsonResponse("every queue that has jobs", responseSchemas.queues), ...problemResponses(400, 401, 403, 503) },
      },
    },
    async (request) => ({ items: await overview.queueStats(readScope(request, request.query.tenant)) }),
  );

  app.get(
    "/workers",
    {
      schema: {
        tags: ["operations"],
        operationId: "listWorkers",
        summary: "live workers with the jobs each is running (a tenant key sees only its own jobs)",
        security: BEARER_SECURITY,
        response: { 200: jsonResponse("live workers", responseSchemas.workers), ...problemResponses(401, 503) },
      },
    },
    async (request) => ({ items: (await overview.listWorkers(actionScope(request))).map(workerJson) }),
  );
}

/** The overview with its times as ISO 8601 text. */
function overviewTimes(overview: Overview): OverviewResponse {
  return {
    ...overview,
    at: overview.at.toISOString(),
    topErrors: overview.topErrors.map((group) => ({ ...group, lastSeenAt: group.lastSeenAt.toISOString() })),
    workers: overview.workers.map((worker) => ({ ...worker, lastSeenAt: isoOrNull(worker.lastSeenAt) })),
  };
}
