import type { Command } from "commander";
import { DEFAULT_API_HOST, DEFAULT_API_PORT, DEFAULT_HTTP_BODY_LIMIT_BYTES, DEFAULT_HTTP_REQUEST_TIMEOUT_MS, DEFAULT_SCHEMA } from "../../core/defaults.js";
import { listenApi } from "../api-server.js";
import { bytesText, withDefault } from "../help-text.js";
import { port, positiveInt } from "../parse.js";
import { untilSignal, withSession } from "../session.js";

interface ApiCommandOptions {
  jobs: string;
  port: number;
  host: string;
  schema: string;
  bodyLimit?: number;
  requestTimeoutMs?: number;
  migrate: boolean;
}

export function registerApi(program: Command): void {
  program
    .command("api")
    .description("serve the HTTP API (jobs, dead letters, queues, workers, metrics, OpenAPI) until SIGTERM/SIGINT")
    .requiredOption("--jobs <module>", "module whose default export is an array of defineJob(...) definitions (the workers' module)")
    .option("--port <port>", "TCP port", port, DEFAULT_API_PORT)
    .option("--host <address>", "address to bind (0.0.0.0 for every interface)", DEFAULT_API_HOST)
    .option("--schema <name>", "schema holding Conveyor's tables", DEFAULT_SCHEMA)
    .option("--body-limit <bytes>", withDefault("largest request body in bytes; larger ones get 413", bytesText(DEFAULT_HTTP_BODY_LIMIT_BYTES)), positiveInt)
    .option("--request-timeout-ms <ms>", withDefault("answer 503 to requests unfinished after this long", DEFAULT_HTTP_REQUEST_TIMEOUT_MS), positiveInt)
    .option("--no-migrate", "do not apply migrations at start")
    .action(async (options: ApiCommandOptions) => {
      await withSession({ schema: options.schema, jobs: options.jobs, migrate: options.migrate, waitForDatabase: true }, async ({ conveyor, log, jobs }) => {
        const server = await listenApi(conveyor, {
          port: options.port,
          host: options.host,
          bodyLimit: options.bodyLimit,
          requestTimeoutMs: options.requestTimeoutMs,
        });
        log.info({ url: server.url, docs: `${server.url}/docs`, kinds: jobs.map((job) => job.kind) }, "API listening");
        await untilSignal(log, "shutting down: finishing in-flight requests");
        await server.close();
      });
    });
}
