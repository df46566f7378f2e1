import type { Conveyor } from "../conveyor.js";
import { ConfigError } from "../core/errors.js";
import { type HttpPackage, loadOptionalPackage } from "../optional-packages.js";

type ApiServer = Awaited<ReturnType<HttpPackage["startApiServer"]>>;

/**
 * Start the API server for a CLI command (`api`, `dev`). A port already in
 * use becomes one line naming the port and the way out, instead of Node's
 * EADDRINUSE. The HTTP package is loaded here, so the other commands
 * (workers above all) never load it, and need not have it installed.
 */
export async function listenApi(conveyor: Conveyor, options: Parameters<HttpPackage["startApiServer"]>[1]): Promise<ApiServer> {
  const { startApiServer } = await loadOptionalPackage("conveyor-jobs-http", "the API and dashboard come in the conveyor-jobs-http package");
  try {
    return await startApiServer(conveyor, options);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "EADDRINUSE") {
      throw new ConfigError(`port ${options.port} on ${options.host} is in use: pass --port <another>, or --port 0 for a free one`);
    }
    throw error;
  }
}
