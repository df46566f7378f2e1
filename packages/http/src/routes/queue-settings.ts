import type { FastifyInstance, FastifyRequest } from "fastify";
import type { z } from "zod";
import { principalOf } from "../auth.js";
import type { RouteContext } from "../context.js";
import { BEARER_SECURITY } from "../openapi.js";
import { HttpProblem } from "../problem.js";
import {
  queueLimitsBody,
  queueParams,
  queueSettingsJson,
  queueSettingsResponse,
  tenantLimitsBody,
  tenantParams,
  tenantSettingsJson,
  tenantSettingsResponse,
} from "../queue-settings-schemas.js";
import { jsonResponse, problemResponses } from "../response-schemas.js";
import { routeSchema } from "../validation.js";

/** Settings affect every tenant's jobs, so only admin keys may change them. */
function requireAdmin(request: FastifyRequest): void {
  if (!principalOf(request).admin) throw new HttpProblem(403, "FORBIDDEN", "only an admin API key may change queue and tenant settings");
}

/** Admin only: pause/resume a queue, set queue limits, cap a tenant. */
export function queueSettingsRoutes(app: FastifyInstance, { conveyor }: RouteContext): void {
  const tags = ["operations"];
  const params = routeSchema(queueParams);
  const ok = (description: string) => ({ 200: jsonResponse(description, queueSettingsResponse) });

  app.post<{ Params: z.output<typeof queueParams> }>(
    "/queues/:name/pause",
    {
      schema: {
        tags,
        operationId: "pauseQueue",
        summary:
          "pause a queue (admin keys only): its jobs stay queued until resumed; running ones finish. " +
          "Creates the queue's settings if it has none, even before its first job (DELETE removes them)",
        security: BEARER_SECURITY,
        params,
        response: { ...ok("the queue's settings"), ...problemResponses(400, 401, 403, 503) },
      },
    },
    async (request) => {
      requireAdmin(request);
      return queueSettingsJson(await conveyor.queues.pause(request.params.name));
    },
  );

  app.post<{ Params: z.output<typeof queueParams> }>(
    "/queues/:name/resume",
    {
      schema: {
        tags,
        operationId: "resumeQueue",
        summary: "resume a paused queue (admin keys only) and wake idle workers",
        security: BEARER_SECURITY,
        params,
        response: { ...ok("the queue's settings"), ...problemResponses(400, 401, 403, 503) },
      },
    },
    async (request) => {
      requireAdmin(request);
      return queueSettingsJson(await conveyor.queues.resume(request.params.name));
    },
  );

  app.patch<{ Params: z.output<typeof queueParams>; Body: z.output<typeof queueLimitsBody> }>(
    "/queues/:name",
    {
      schema: {
        tags,
        operationId: "setQueueLimits",
        summary:
          "set a queue's concurrency cap and rate limit across all workers (admin keys only); null removes one. " +
          "Creates the queue's settings if it has none, even before its first job (DELETE removes them)",
        security: BEARER_SECURITY,
        params,
        body: routeSchema(queueLimitsBody),
        response: { ...ok("the queue's settings"), ...problemResponses(400, 401, 403, 415, 422, 503) },
      },
    },
    async (request) => {
      requireAdmin(request);
      return queueSettingsJson(await conveyor.queues.setLimits(request.params.name, request.body));
    },
  );

  app.delete<{ Params: z.output<typeof queueParams> }>(
    "/queues/:name",
    {
      schema: {
        tags,
        operationId: "deleteQueueSettings",
        summary:
          "delete a queue's settings (admin keys only): it is resumed and its limits lifted, its jobs untouched; " +
          "pausing or limiting a queue creates them, even before its first job",
        security: BEARER_SECURITY,
        params,
        response: { 204: { description: "deleted", type: "null" }, ...problemResponses(400, 401, 403, 404, 503) },
      },
    },
    async (request, reply) => {
      requireAdmin(request);
      await conveyor.queues.deleteSettings(request.params.name);
      reply.code(204); // no body: Fastify sends an empty 204 for an undefined result
    },
  );

  app.patch<{ Params: z.output<typeof tenantParams>; Body: z.output<typeof tenantLimitsBody> }>(
    "/tenants/:tenant",
    {
      schema: {
        tags,
        operationId: "setTenantLimits",
        summary: "cap a tenant's jobs running at once across all workers (admin keys only); null removes the cap",
        security: BEARER_SECURITY,
        params: routeSchema(tenantParams),
        body: routeSchema(tenantLimitsBody),
        response: {
          200: jsonResponse("the tenant's settings", tenantSettingsResponse),
          ...problemResponses(400, 401, 403, 415, 422, 503),
        },
      },
    },
    async (request) => {
      requireAdmin(request);
      return tenantSettingsJson(await conveyor.queues.setTenantLimits(request.params.tenant, request.body));
    },
  );
}
