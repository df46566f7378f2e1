/**
 * The HTTP API, as a separate entry point (`conveyor/http`) so applications
 * that only enqueue and run jobs never load Fastify.
 */
export { buildApp } from "./app.js";
export type { ConveyorApp } from "./app.js";
export type { ApiOptions } from "./options.js";
export { startApiServer } from "./server.js";
export type { ApiServer, ApiServerOptions } from "./server.js";
export { ApiMetrics } from "./metrics.js";
export type { ProblemBody, ProblemCode } from "./problem.js";
export { ApiKeys, API_KEY_PREFIX } from "../client/api-keys.js";
export type { ApiKeyRecord, CreateApiKeyOptions } from "../client/api-keys.js";
