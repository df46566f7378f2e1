import { z } from "zod";
import type { AnyJobDefinition } from "conveyor-jobs";

/**
 * The JSON Schema (draft 2020-12, input side) of a job kind's payload, for
 * the OpenAPI document. In order: the Standard JSON Schema interface
 * (`schema["~standard"].jsonSchema`, which zod 4.2+, valibot and arktype
 * implement), then zod's own converter, else `{}` (any JSON): a schema that
 * cannot be described never stops the API from starting.
 */
export function payloadJsonSchema(definition: AnyJobDefinition): Record<string, unknown> {
  const schema = definition.schema as unknown as {
    "~standard": { jsonSchema?: { input(options: { target: string }): Record<string, unknown> } };
    _zod?: unknown;
  };
  const converter = schema["~standard"].jsonSchema;
  if (converter) {
    try {
      return withoutDialect(converter.input({ target: "draft-2020-12" }));
    } catch {
      // e.g. a zod date or transform the strict converter refuses: try zod's lenient mode below.
    }
  }
  if (schema._zod !== undefined) {
    try {
      return withoutDialect(z.toJSONSchema(schema as unknown as z.ZodType, { target: "draft-2020-12", io: "input", unrepresentable: "any" }));
    } catch {
      // fall through
    }
  }
  return {};
}

function withoutDialect(json: Record<string, unknown>): Record<string, unknown> {
  const { $schema: _ignored, ...rest } = json;
  return rest;
}

/**
 * Re-anchor a standalone schema's internal references ("#", "#/$defs/X")
 * at the place it will live in the OpenAPI document (e.g.
 * "#/components/schemas/JobPayload.email.send"), so recursive and shared
 * parts still resolve there.
 */
export function reanchorRefs(json: unknown, anchor: string): unknown {
  if (Array.isArray(json)) return json.map((item) => reanchorRefs(item, anchor));
  if (json === null || typeof json !== "object") return json;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(json)) {
    out[key] = key === "$ref" && typeof value === "string" && value.startsWith("#") ? anchor + value.slice(1) : reanchorRefs(value, anchor);
  }
  return out;
}
