import type { FastifyInstance, FastifyRequest } from "fastify";
import type { ConveyorClient, SchemaStatus } from "conveyor-jobs";
import { READ_ONLY_RETRY_AFTER_S } from "conveyor-jobs/server";
import type { RouteContext } from "../context.js";
import { HttpProblem } from "../problem.js";
import { jsonResponse, problemResponses } from "../response-schemas.js";

const tags = ["operations"];

/** Health, readiness and metrics: unauthenticated, for load balancers and Prometheus. */
export function systemRoutes(app: FastifyInstance, { conveyor, metrics }: RouteContext): void {
  app.get(
    "/healthz",
    {
      schema: {
        tags,
        operationId: "getHealth",
        summary: "the process is up (does not touch the database)",
        response: {
          200: jsonResponse("up", { type: "object", properties: { status: { const: "ok" } }, required: ["status"], additionalProperties: false }),
        },
      },
    },
    async () => ({ status: "ok" }),
  );

  app.get(
    "/readyz",
    {
      schema: {
        tags,
        operationId: "getReadiness",
        summary: "the database is reachable, takes writes, and its schema is at this Conveyor's newest migration",
        response: {
          200: jsonResponse("ready", {
            type: "object",
            properties: { status: { const: "ready" }, schemaVersion: { type: "integer" } },
            required: ["status", "schemaVersion"],
            additionalProperties: false,
          }),
          ...problemResponses(503),
        },
      },
    },
    async (request) => {
      const status = await schemaState(conveyor, request);
      if (status.current !== status.latest) {
        throw new HttpProblem(
          503,
          "UNAVAILABLE",
          status.current < status.latest
            ? `the database schema is at migration ${status.current}, this Conveyor needs ${status.latest}: run conveyor migrate`
            : `the database schema is at migration ${status.current}, newer than this Conveyor (${status.latest}): upgrade Conveyor`,
          { extensions: { schemaVersion: status.current, expectedSchemaVersion: status.latest } },
        );
      }
      if (!status.writable) {
        throw new HttpProblem(503, "DATABASE_READ_ONLY", "the database refuses writes (it is read-only, as during a failover): enqueues would fail", {
          headers: { "retry-after": String(READ_ONLY_RETRY_AFTER_S) },
        });
      }
      return { status: "ready", schemaVersion: status.current };
    },
  );

  app.get(
    "/metrics",
    {
      schema: {
        tags,
        operationId: "getMetrics",
        summary: "Prometheus metrics: HTTP requests, jobs enqueued, queue depth by status",
        produces: ["text/plain"],
        response: { 200: { description: "Prometheus text exposition format", type: "string" } },
      },
    },
    async (_request, reply) => {
      reply.type(metrics.registry.contentType);
      return metrics.registry.metrics();
    },
  );
}

/** The schema's migration state; 503 when the database cannot be asked. */
async function schemaState(conveyor: ConveyorClient, request: FastifyRequest): Promise<SchemaStatus> {
  try {
    return await conveyor.schemaStatus();
  } catch (error) {
    request.log.warn({ err: error }, "readiness check: database unreachable");
    throw new HttpProblem(503, "UNAVAILABLE", "the database is unreachable");
  }
}
