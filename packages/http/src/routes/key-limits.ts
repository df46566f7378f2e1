import type { FastifyInstance, FastifyRequest } from "fastify";
import type { z } from "zod";
import { keyLimitSettingsJson, keyLoadJson, keyStatusJson } from "conveyor-jobs/server";
import { principalOf } from "../auth.js";
import type { RouteContext } from "../context.js";
import { keyLimitsBody, keyParams, topKeysQuery } from "../key-limit-schemas.js";
import { BEARER_SECURITY } from "../openapi.js";
import { HttpProblem } from "../problem.js";
import { queueParams } from "../queue-settings-schemas.js";
import { jsonResponse, problemResponses, responseSchemas } from "../response-schemas.js";
import { routeSchema } from "../validation.js";

/** Keys span tenants (a host, a customer account), so only admin keys may read or change their limits. */
function requireAdmin(request: FastifyRequest): void {
  if (!principalOf(request).admin) throw new HttpProblem(403, "FORBIDDEN", "only an admin API key may read or change limits per key");
}

type QueueParams = { Params: z.output<typeof queueParams> };
type KeyParams = { Params: z.output<typeof keyParams> };

/** Admin only: limits per key (a queue's default and single keys' overrides), the busiest keys, and why a key waits. */
export function keyLimitRoutes(app: FastifyInstance, { conveyor }: RouteContext): void {
  const tags = ["operations"];
  const limitsResponse = { 200: jsonResponse("the limits as stored", responseSchemas.keyLimitSettings) };

  app.patch<QueueParams & { Body: z.output<typeof keyLimitsBody> }>(
    "/queues/:name/key-limits",
    {
      schema: {
        tags,
        operationId: "setQueueKeyLimits",
        summary:
          "set the limits of every key of a queue (admin keys only): most jobs of one key running at once, starts per " +
          "window, or a throttle; null removes one, an omitted field keeps its value; takes effect at the next claim",
        security: BEARER_SECURITY,
        params: routeSchema(queueParams),
        body: routeSchema(keyLimitsBody),
        response: { ...limitsResponse, ...problemResponses(400, 401, 403, 415, 422, 503) },
      },
    },
    async (request) => {
      requireAdmin(request);
      return keyLimitSettingsJson(await conveyor.keyLimits.set(request.params.name, request.body));
    },
  );

  app.get<QueueParams>(
    "/queues/:name/key-limits",
    {
      schema: {
        tags,
        operationId: "listQueueKeyLimits",
        summary: "a queue's key limits (admin keys only): its default (key null) first, then its overrides",
        security: BEARER_SECURITY,
        params: routeSchema(queueParams),
        response: { 200: jsonResponse("the queue's key limits", responseSchemas.keyLimitList), ...problemResponses(400, 401, 403, 503) },
      },
    },
    async (request) => {
      requireAdmin(request);
      return { items: (await conveyor.keyLimits.list(request.params.name)).map(keyLimitSettingsJson) };
    },
  );

  app.get(
    "/key-limits",
    {
      schema: {
        tags,
        operationId: "listKeyLimits",
        summary: "every queue's key limits (admin keys only): each queue's default (key null) first, then its overrides",
        security: BEARER_SECURITY,
        response: { 200: jsonResponse("key limits of every queue", responseSchemas.keyLimitList), ...problemResponses(401, 403, 503) },
      },
    },
    async (request) => {
      requireAdmin(request);
      return { items: (await conveyor.keyLimits.list()).map(keyLimitSettingsJson) };
    },
  );

  app.delete<QueueParams>(
    "/queues/:name/key-limits",
    {
      schema: {
        tags,
        operationId: "deleteQueueKeyLimits",
        summary: "delete every key limit of a queue, default and overrides (admin keys only); its jobs are untouched",
        security: BEARER_SECURITY,
        params: routeSchema(queueParams),
        response: { 204: { description: "deleted", type: "null" }, ...problemResponses(400, 401, 403, 503) },
      },
    },
    async (request, reply) => {
      requireAdmin(request);
      await conveyor.keyLimits.delete(request.params.name);
      reply.code(204);
    },
  );

  app.get<QueueParams & { Querystring: z.output<typeof topKeysQuery> }>(
    "/queues/:name/keys",
    {
      schema: {
        tags,
        operationId: "listTopKeys",
        summary: "the keys of a queue with the most jobs waiting, with their running jobs and limits (admin keys only)",
        security: BEARER_SECURITY,
        params: routeSchema(queueParams),
        querystring: routeSchema(topKeysQuery),
        response: { 200: jsonResponse("keys, most jobs waiting first", responseSchemas.topKeys), ...problemResponses(400, 401, 403, 503) },
      },
    },
    async (request) => {
      requireAdmin(request);
      return { items: (await conveyor.keyLimits.top(request.params.name, request.query.limit)).map(keyLoadJson) };
    },
  );

  app.get<KeyParams>(
    "/queues/:name/keys/:key",
    {
      schema: {
        tags,
        operationId: "getKeyStatus",
        summary:
          "what one key of a queue is doing and why its waiting jobs are not running (admin keys only): " +
          "paused queue, concurrency limit, full rate window, or nothing",
        security: BEARER_SECURITY,
        params: routeSchema(keyParams),
        response: { 200: jsonResponse("the key's limits, jobs and state", responseSchemas.keyStatus), ...problemResponses(400, 401, 403, 503) },
      },
    },
    async (request) => {
      requireAdmin(request);
      return keyStatusJson(await conveyor.keyLimits.status(request.params.name, request.params.key));
    },
  );

  app.patch<KeyParams & { Body: z.output<typeof keyLimitsBody> }>(
    "/queues/:name/keys/:key/limits",
    {
      schema: {
        tags,
        operationId: "setKeyLimits",
        summary:
          "override the limits of one key of a queue (admin keys only); the override replaces the queue's default " +
          "for that key; takes effect at the next claim",
        security: BEARER_SECURITY,
        params: routeSchema(keyParams),
        body: routeSchema(keyLimitsBody),
        response: { ...limitsResponse, ...problemResponses(400, 401, 403, 415, 422, 503) },
      },
    },
    async (request) => {
      requireAdmin(request);
      return keyLimitSettingsJson(await conveyor.keyLimits.set(request.params.name, request.body, { key: request.params.key }));
    },
  );

  app.delete<KeyParams>(
    "/queues/:name/keys/:key/limits",
    {
      schema: {
        tags,
        operationId: "deleteKeyLimits",
        summary: "delete one key's override (admin keys only): the queue's default applies to it again",
        security: BEARER_SECURITY,
        params: routeSchema(keyParams),
        response: { 204: { description: "deleted", type: "null" }, ...problemResponses(400, 401, 403, 404, 503) },
      },
    },
    async (request, reply) => {
      requireAdmin(request);
      await conveyor.keyLimits.delete(request.params.name, { key: request.params.key });
      reply.code(204);
    },
  );
}
