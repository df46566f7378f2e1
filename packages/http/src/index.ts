/**
 * The HTTP API and the dashboard (`conveyor-jobs-http`), a package of its
 * own so applications that only enqueue and run jobs never install Fastify.
 */
import type { HttpPackage } from "conveyor-jobs/server";
import { startApiServer } from "./server.js";

// The CLI of conveyor-jobs loads this package for `conveyor api` and `conveyor dev`.
startApiServer satisfies HttpPackage["startApiServer"];

export { buildApp } from "./app.js";
export type { ConveyorApp } from "./app.js";
export type { ApiOptions } from "./options.js";
export { startApiServer };
export type { ApiServer, ApiServerOptions } from "./server.js";
export { ApiMetrics } from "./metrics.js";
export type { ProblemBody, ProblemCode } from "./problem.js";
export { API_KEY_PREFIX, ApiKeys } from "conveyor-jobs/server";
export type { ApiKeyRecord, CreateApiKeyOptions } from "conveyor-jobs/server";
