import Fastify, { type FastifyInstance, LogController } from "fastify";
import type { ConveyorClient } from "conveyor-jobs";
import { MAX_HTTP_PATH_SEGMENT_LENGTH } from "conveyor-jobs/server";
import { authenticateWith } from "./auth.js";
import { installBulkActionSweep } from "./bulk-action-sweep.js";
import { installDashboard } from "./dashboard.js";
import type { RouteContext } from "./context.js";
import { clientErrorHandler, frameworkErrorHandler, installErrorHandling } from "./error-handler.js";
import { installJsonBody } from "./json-body.js";
import { installLateResultGuard } from "./late-results.js";
import { ApiMetrics } from "./metrics.js";
import { describeKinds, installOpenApi } from "./openapi.js";
import { type ApiOptions, resolveApiOptions } from "./options.js";
import { installRequestIdHeader, requestIdFor } from "./request-id.js";
import { bulkActionRoutes } from "./routes/bulk-actions.js";
import { deadLetterRoutes } from "./routes/dead-letters.js";
import { durableRoutes } from "./routes/durable.js";
import { flowRoutes } from "./routes/flows.js";
import { jobCreateRoutes } from "./routes/jobs-create.js";
import { jobRoutes } from "./routes/jobs.js";
import { maintenanceRoutes } from "./routes/maintenance.js";
import { operationRoutes } from "./routes/operations.js";
import { scheduleRoutes } from "./routes/schedules.js";
import { queueSettingsRoutes } from "./routes/queue-settings.js";
import { keyLimitRoutes } from "./routes/key-limits.js";
import { statsRoutes } from "./routes/stats.js";
import { systemRoutes } from "./routes/system.js";
import { installValidation } from "./validation.js";

/** The app `buildApp` returns, with its metrics registry. */
export type ConveyorApp = FastifyInstance & {
  /** The API's Prometheus metrics, served at `/metrics`. */
  conveyorMetrics: ApiMetrics;
};

/**
 * Build the HTTP API as a Fastify app from a client, without binding a
 * port: test it with `app.inject(...)`, serve it with `startApiServer` (or
 * `app.listen`). The job kinds (and their payload schemas, for validation
 * and the OpenAPI document) are the client's `jobs`. The client's schema
 * must be migrated; `GET /readyz` says whether it is. Closing the app does
 * not close the client.
 *
 * @example
 * const app = await buildApp(new Conveyor({ connectionString, jobs }), { bodyLimit: 2 * 1024 * 1024 });
 * const response = await app.inject({ method: "GET", url: "/healthz" });
 */
export async function buildApp(conveyor: ConveyorClient, options: ApiOptions = {}): Promise<ConveyorApp> {
  const resolved = resolveApiOptions(options, conveyor.logger);
  const limits = { bodyLimit: resolved.bodyLimit, timeoutMs: resolved.requestTimeoutMs };
  const app = Fastify({
    loggerInstance: resolved.logger,
    bodyLimit: resolved.bodyLimit,
    genReqId: requestIdFor,
    requestIdHeader: false,
    logController: new LogController({ requestIdLogLabel: "requestId" }),
    // Covers the whole request (hooks, body, handler): unanswered by then → 503 problem+json.
    handlerTimeout: resolved.requestTimeoutMs,
    // Path parameters are checked precisely by their schemas; the router only stops absurd ones.
    routerOptions: { maxParamLength: MAX_HTTP_PATH_SEGMENT_LENGTH },
    // What fails before a route runs is answered as problem+json too.
    frameworkErrors: frameworkErrorHandler(limits),
    clientErrorHandler: clientErrorHandler(limits),
  }) as unknown as FastifyInstance;
  const overview = conveyor.queueOverview;
  const metrics = new ApiMetrics(overview, resolved.logger);
  const context: RouteContext = { conveyor, overview, metrics, kinds: describeKinds(conveyor.jobs) };

  // Order matters: hooks and compilers set here apply to every route registered after.
  installRequestIdHeader(app);
  installErrorHandling(app, limits);
  installValidation(app);
  // No serializer compiler is set: Fastify's own (fast-json-stringify) writes each response through
  // the route's response schema for its status and media type, so nothing undeclared goes out.
  installJsonBody(app, resolved.bodyLimit);
  installLateResultGuard(app);
  metrics.install(app);
  await installOpenApi(app, context.kinds, { swaggerUi: resolved.swaggerUi });

  systemRoutes(app, context);
  installDashboard(app);
  const keys = conveyor.apiKeys;
  await app.register(
    async (v1) => {
      v1.addHook("onRequest", authenticateWith(keys));
      jobCreateRoutes(v1, context);
      jobRoutes(v1, context);
      flowRoutes(v1, context);
      durableRoutes(v1, context);
      deadLetterRoutes(v1, context);
      operationRoutes(v1, context);
      queueSettingsRoutes(v1, context);
      keyLimitRoutes(v1, context);
      statsRoutes(v1, context);
      scheduleRoutes(v1, context);
      maintenanceRoutes(v1, context);
      bulkActionRoutes(v1, context);
    },
    { prefix: "/v1" },
  );
  installBulkActionSweep(app, conveyor, resolved.logger, resolved.bulkActionSweepMs);
  app.decorate("conveyorMetrics", metrics);
  return app as ConveyorApp;
}
