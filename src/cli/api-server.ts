import type { Conveyor } from "../conveyor.js";
import { ConfigError } from "../core/errors.js";
import type { ApiServer, ApiServerOptions } from "../http/server.js";

/**
 * Start the API server for a CLI command (`api`, `dev`). A port already in
 * use becomes one line naming the port and the way out, instead of Node's
 * EADDRINUSE. Fastify is loaded here, so the other commands (workers above
 * all) never load it.
 */
export async function listenApi(conveyor: Conveyor, options: ApiServerOptions & { port: number; host: string }): Promise<ApiServer> {
  const { startApiServer } = await import("../http/server.js");
  try {
    return await startApiServer(conveyor, options);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EADDRINUSE") {
      throw new ConfigError(`port ${options.port} on ${options.host} is in use: pass --port <another>, or --port 0 for a free one`);
    }
    throw error;
  }
}
