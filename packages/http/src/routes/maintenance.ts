import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { MAX_RETENTION_AGE_MS, MAX_RETENTION_BATCH_SIZE, requestObject } from "conveyor-jobs/server";
import { principalOf } from "../auth.js";
import type { RouteContext } from "../context.js";
import { BEARER_SECURITY } from "../openapi.js";
import { HttpProblem } from "../problem.js";
import { jsonResponse, problemResponses } from "../response-schemas.js";
import { responseSchema, routeSchema } from "../validation.js";

const age = (what: string) => z.number().min(0).max(MAX_RETENTION_AGE_MS).optional().describe(what);

/** The body of `POST /v1/maintenance/prune`; every field optional, as is the body itself (Fastify passes null for none). */
export const pruneBody = requestObject({
  finishedMs: age("delete succeeded and cancelled jobs that finished longer ago than this (ms); default 7 days"),
  deadLetterMs: age("delete dead letters older than this (ms), with their jobs; default 30 days"),
  eventsMs: age("delete events sent longer ago than this (ms); default 7 days"),
  batchSize: z.number().int().min(1).max(MAX_RETENTION_BATCH_SIZE).optional().describe("rows per delete statement; default 1000"),
})
  .nullish();

const pruneResponse = responseSchema(
  z.object({
    jobs: z.number().int().describe("succeeded and cancelled jobs deleted, with their executions"),
    deadLetters: z.number().int().describe("dead letters deleted, each with its dead job and executions"),
    flows: z.number().int().describe("flows and batches deleted: older than the finished-job age, with no job left"),
    events: z.number().int().describe("events deleted: sent longer ago than the events age"),
  }),
);

/**
 * `POST /v1/maintenance/prune`: delete old finished jobs and dead letters now
 * (workers also do this on their own). Admin keys only: it deletes every
 * tenant's rows, so a tenant key is refused with 403. Stops between batches
 * when the request times out or the client goes away, so it never outlives
 * its request by more than one batch.
 */
export function maintenanceRoutes(app: FastifyInstance, { conveyor }: RouteContext): void {
  app.post<{ Body: z.output<typeof pruneBody> }>(
    "/maintenance/prune",
    {
      schema: {
        tags: ["operations"],
        operationId: "pruneFinished",
        summary: "delete old succeeded/cancelled jobs and dead letters now, in small batches (admin keys only)",
        security: BEARER_SECURITY,
        body: routeSchema(pruneBody),
        response: {
          200: jsonResponse("rows deleted", pruneResponse),
          ...problemResponses(400, 401, 403, 422, 503),
        },
      },
      // Before the body is validated: a tenant key learns it may not prune, not what the body should be.
      preValidation: async (request) => {
        if (!principalOf(request).admin) {
          throw new HttpProblem(403, "FORBIDDEN", "pruning deletes every tenant's rows: it needs an admin API key");
        }
      },
    },
    async (request) => conveyor.prune({ ...request.body, signal: request.signal }),
  );
}
