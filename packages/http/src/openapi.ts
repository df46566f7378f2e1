import swagger from "@fastify/swagger";
import swaggerUi from "@fastify/swagger-ui";
import type { FastifyInstance } from "fastify";
import type { AnyJobDefinition } from "conveyor-jobs";
import { payloadJsonSchema, reanchorRefs } from "./payload-schema.js";

/** Security requirement of every `/v1` route in the OpenAPI document. */
export const BEARER_SECURITY = [{ bearerAuth: [] as string[] }];

/** The job kinds as the OpenAPI document shows them: one component per payload schema. */
export interface KindDocs {
  /** Kind names, in the order the jobs module lists them. */
  kinds: string[];
  /** `components.schemas` entries, one per kind. */
  components: Record<string, unknown>;
  /** One `oneOf` branch per kind: `{ kind: const, payload: $ref }`. */
  variants: Array<Record<string, unknown>>;
}

/** Describe each kind's payload schema for the OpenAPI document. */
export function describeKinds(jobs: ReadonlyMap<string, AnyJobDefinition>): KindDocs {
  const docs: KindDocs = { kinds: [], components: {}, variants: [] };
  for (const definition of jobs.values()) {
    // Component names allow only letters, digits and . - _; kinds may also hold : and /.
    const base = `JobPayload.${definition.kind.replace(/[^A-Za-z0-9._-]/g, "_")}`;
    let name = base;
    for (let n = 2; name in docs.components; n++) name = `${base}_${n}`;
    const anchor = `#/components/schemas/${name}`;
    docs.kinds.push(definition.kind);
    docs.components[name] = { title: `payload of ${definition.kind}`, ...(reanchorRefs(payloadJsonSchema(definition), anchor) as object) };
    docs.variants.push({
      title: definition.kind,
      properties: { kind: { const: definition.kind }, payload: { $ref: anchor } },
    });
  }
  return docs;
}

/**
 * A job-creating body schema with the kinds spelled out: `kind` lists the
 * known kinds, and `oneOf` pairs each kind with its payload schema.
 */
export function withKindVariants(schema: Record<string, unknown>, docs: KindDocs): Record<string, unknown> {
  if (docs.kinds.length === 0) return schema;
  const properties = schema.properties as Record<string, Record<string, unknown>>;
  return {
    ...schema,
    properties: { ...properties, kind: { ...properties.kind, enum: docs.kinds } },
    oneOf: docs.variants,
  };
}

/**
 * Register OpenAPI 3.1 generation (from the route schemas, so register this
 * before the routes) and Swagger UI at `/docs`; serve the document at
 * `GET /openapi.json`.
 */
export async function installOpenApi(app: FastifyInstance, docs: KindDocs, options: { swaggerUi: boolean }): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: "3.1.0",
      info: {
        title: "Conveyor API",
        version: "1.0.0",
        description:
          "Background jobs on PostgreSQL: enqueue, inspect and cancel jobs, manage dead letters, watch queues and workers. " +
          "Every /v1 route needs `Authorization: Bearer <API key>`; errors are RFC 9457 problem+json.",
      },
      components: {
        securitySchemes: { bearerAuth: { type: "http", scheme: "bearer", description: "an API key from `conveyor keys create`" } },
        schemas: docs.components as Record<string, never>,
      },
      tags: [
        { name: "jobs", description: "enqueue, inspect, cancel" },
        { name: "flows", description: "graphs of jobs and batches with a callback" },
        { name: "durable execution", description: "events for waiting jobs; a durable job's steps, resume and rerun from a step" },
        { name: "dead letters", description: "jobs that will not succeed" },
        { name: "operations", description: "queues, workers, health, metrics" },
        { name: "bulk actions", description: "act on every job a filter selects, in batches on the server" },
      ],
    },
  });
  if (options.swaggerUi) await app.register(swaggerUi, { routePrefix: "/docs" });
  app.get(
    "/openapi.json",
    {
      schema: {
        tags: ["operations"],
        summary: "this OpenAPI document",
        operationId: "getOpenApi",
        // Any JSON object: serialized as it is.
        response: { 200: { description: "the OpenAPI 3.1 document", content: { "application/json": { schema: { type: "object", additionalProperties: true } } } } },
      },
    },
    async () => app.swagger(),
  );
}
