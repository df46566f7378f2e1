import type { AddressInfo } from "node:net";
import type { ConveyorClient } from "conveyor-jobs";
import { ConfigError } from "conveyor-jobs";
import { checkKnownFields, DEFAULT_API_HOST, DEFAULT_API_PORT } from "conveyor-jobs/server";
import { buildApp, type ConveyorApp } from "./app.js";
import { API_OPTION_FIELDS, type ApiOptions } from "./options.js";

/** Options of `startApiServer`: the app's options plus where to listen. */
export interface ApiServerOptions extends ApiOptions {
  /** TCP port; 0 picks a free one. Default `DEFAULT_API_PORT` (8080). */
  port?: number;
  /** Address to bind. Default `DEFAULT_API_HOST` ("127.0.0.1"): reachable from this machine only. */
  host?: string;
}

/** A listening API server. */
export interface ApiServer {
  /** The Fastify app serving the API. */
  app: ConveyorApp;
  /** e.g. `http://127.0.0.1:8080`. */
  url: string;
  /** The port bound (useful when 0 asked for any free one). */
  port: number;
  /** Stop accepting connections and finish in-flight requests. Does not close the client. */
  close(): Promise<void>;
}

/**
 * Build the app and bind it to a port: what `conveyor api` runs.
 *
 * @example
 * const server = await startApiServer(conveyor, { port: 0 });
 * console.log(server.url);
 * await server.close();
 */
export async function startApiServer(conveyor: ConveyorClient, options: ApiServerOptions = {}): Promise<ApiServer> {
  checkKnownFields(options, { ...API_OPTION_FIELDS, port: true, host: true }, "an option of startApiServer", { ErrorType: ConfigError });
  const { port = DEFAULT_API_PORT, host = DEFAULT_API_HOST, ...appOptions } = options;
  const app = await buildApp(conveyor, appOptions);
  await app.listen({ port, host });
  const address = app.server.address() as AddressInfo;
  const shownHost = address.family === "IPv6" ? `[${address.address}]` : address.address;
  return { app, url: `http://${shownHost}:${address.port}`, port: address.port, close: () => app.close() };
}
