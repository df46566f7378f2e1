import type { FastifyInstance } from "fastify";
import { z } from "zod";
import type { ValidationIssue } from "conveyor-jobs";
import { requestObject } from "conveyor-jobs/server";

/** Which part of a request a schema checks (as Fastify names them). */
export type RequestPart = "body" | "params" | "querystring" | "headers";

/** A request part that broke its schema; the error handler answers 400 (params, query) or 422 (body). */
export class RequestValidationError extends Error {
  readonly part: RequestPart;
  readonly issues: readonly ValidationIssue[];
  // Fastify reads these two when it wraps validation errors.
  statusCode = 400;
  code = "FST_ERR_VALIDATION";

  constructor(part: RequestPart, issues: readonly ValidationIssue[]) {
    const where = part === "querystring" ? "query" : part === "params" ? "path" : part;
    super(`invalid ${where}: ${issues.map((issue) => (issue.path ? `${issue.path}: ${issue.message}` : issue.message)).join("; ")}`);
    this.name = "RequestValidationError";
    this.part = part;
    this.issues = issues;
  }
}

// Route schemas are JSON Schema (what Fastify and the OpenAPI generator
// read); each one made by `routeSchema` remembers the zod schema it came
// from, which is what actually validates. One source, so the documentation
// cannot drift from the checks.
const validators = new WeakMap<object, z.ZodType>();

/**
 * The JSON Schema of a zod schema (input side, draft 2020-12), registered
 * so the app validates that request part with the zod schema itself. Pass
 * `document` to publish a richer schema than the conversion gives (the
 * create-job body lists each job kind's payload schema).
 */
export function routeSchema(schema: z.ZodType, document?: Record<string, unknown>): Record<string, unknown> {
  const json = document ?? toJsonSchema(schema);
  validators.set(json, schema);
  return json;
}

/**
 * zod → JSON Schema (draft 2020-12), without the `$schema` member and the
 * ±2^53 bounds zod puts on every integer (both noise inside OpenAPI). The
 * input side by default (what a request may send); the output side for a
 * response, whose objects are closed.
 */
export function toJsonSchema(schema: z.ZodType, io: "input" | "output" = "input"): Record<string, unknown> {
  const { $schema: _ignored, ...json } = z.toJSONSchema(schema, {
    target: "draft-2020-12",
    io,
    unrepresentable: "any",
    override: ({ jsonSchema }) => {
      if (jsonSchema.minimum === Number.MIN_SAFE_INTEGER) delete jsonSchema.minimum;
      if (jsonSchema.maximum === Number.MAX_SAFE_INTEGER) delete jsonSchema.maximum;
    },
  });
  return json;
}

/**
 * A response schema: the output side of a zod schema, its objects closed
 * (`additionalProperties: false`), and each nullable value written as a type
 * list (`type: ["string", "null"]`) rather than zod's `anyOf` with null. Both
 * say the same; the serializer runs a schema validator for every `anyOf` it
 * meets, which made a page of 1,000 jobs three times slower to write.
 */
export function responseSchema(schema: z.ZodType): Record<string, unknown> {
  return nullableAsTypeList(toJsonSchema(schema, "output")) as Record<string, unknown>;
}

function nullableAsTypeList(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(nullableAsTypeList);
  if (node === null || typeof node !== "object") return node;
  const entries = Object.entries(node).map(([key, value]) => [key, nullableAsTypeList(value)] as const);
  const { anyOf, ...rest } = Object.fromEntries(entries) as Record<string, unknown>;
  if (!Array.isArray(anyOf) || anyOf.length !== 2) return anyOf === undefined ? rest : { ...rest, anyOf };
  const nullAt = anyOf.findIndex((option) => isPlainNull(option));
  const other = anyOf[1 - nullAt] as Record<string, unknown> | undefined;
  // Only a single-typed value merges simply; an enum or const would have to list null too.
  const simple = other !== undefined && typeof other.type === "string" && !["anyOf", "oneOf", "allOf", "$ref", "enum", "const"].some((key) => key in other);
  if (nullAt < 0 || !simple) return { ...rest, anyOf };
  return { ...other, ...rest, type: [other.type, "null"] };
}

function isPlainNull(option: unknown): boolean {
  return typeof option === "object" && option !== null && Object.keys(option).length === 1 && (option as { type?: unknown }).type === "null";
}

/**
 * The body of a route that takes none: nothing (Fastify passes null), or `{}`. Every POST, PUT,
 * PATCH and DELETE route that declares no body gets this one (see
 * `installValidation`), so a body sent to it is refused, never ignored.
 */
export const emptyBody = requestObject({}).nullish();

const WRITE_METHODS = new Set(["POST", "PUT", "PATCH", "DELETE"]);

/**
 * Validate every request part with the zod schema behind its route schema.
 * The parsed value replaces the raw one, so handlers get zod's output
 * (numbers from query strings, defaults applied). A route schema not made by
 * `routeSchema` is a programming error and fails at startup. A write route
 * (POST, PUT, PATCH, DELETE) that declares no body gets `emptyBody`.
 */
export function installValidation(app: FastifyInstance): void {
  app.addHook("preValidation", async (request) => checkQueryEncoding(request.url));
  app.addHook("onRoute", (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    if (!methods.some((method) => WRITE_METHODS.has(method))) return;
    const schema = (route.schema ??= {}) as { body?: unknown };
    schema.body ??= routeSchema(emptyBody);
  });
  app.setValidatorCompiler(({ schema, httpPart, url, method }) => {
    const validator = validators.get(schema as object);
    if (!validator) throw new Error(`${method} ${url}: ${String(httpPart)} schema was not made with routeSchema()`);
    const part = (httpPart ?? "body") as RequestPart;
    return (data: unknown) => {
      const result = validator.safeParse(data);
      if (result.success) return { value: result.data };
      return { error: new RequestValidationError(part, result.error.issues.flatMap(toIssues)) };
    };
  });
}

/**
 * Refuse a query string whose names or values are not percent-encoded
 * UTF-8 (`?kind=%FF`, `?kind=%ED%A0%80`, a stray `%`) with 400 naming each
 * parameter: the query parser keeps such text as it came, so a search
 * would silently run for the literal `%FF`.
 */
function checkQueryEncoding(url: string): void {
  const start = url.indexOf("?");
  if (start < 0) return;
  const issues: ValidationIssue[] = [];
  for (const pair of url.slice(start + 1).split("&")) {
    const equals = pair.indexOf("=");
    const rawName = equals < 0 ? pair : pair.slice(0, equals);
    const name = percentDecoded(rawName);
    if (name === undefined || (equals >= 0 && percentDecoded(pair.slice(equals + 1)) === undefined)) {
      issues.push({ path: name ?? rawName.slice(0, 64), message: "is not percent-encoded UTF-8" });
    }
  }
  if (issues.length > 0) throw new RequestValidationError("querystring", issues);
}

/** A query-string component decoded (`+` is a space), or undefined when it is not percent-encoded UTF-8. */
function percentDecoded(component: string): string | undefined {
  try {
    return decodeURIComponent(component.replace(/\+/g, " "));
  } catch {
    return undefined;
  }
}

/** One issue per problem, each naming its path; an unknown key is named as the path itself. */
function toIssues(issue: z.core.$ZodIssue): ValidationIssue[] {
  const path = issue.path.map(String);
  if (issue.code === "unrecognized_keys") return issue.keys.map((key) => ({ path: [...path, key].join("."), message: "is not a known field" }));
  return [{ path: path.join("."), message: issue.message }];
}
