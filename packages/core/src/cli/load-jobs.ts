import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import type { AnyJobDefinition } from "../core/define-job.js";
import { ConfigError } from "../core/errors.js";

/**
 * Load a jobs module: its default export must be an array of `defineJob`
 * definitions (the same module for workers and the API).
 */
export async function loadJobs(modulePath: string): Promise<AnyJobDefinition[]> {
  const url = pathToFileURL(resolve(process.cwd(), modulePath)).href;
  let loaded: { default?: unknown };
  try {
    loaded = (await import(url)) as { default?: unknown };
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code === "ERR_MODULE_NOT_FOUND" && (error as Error).message.includes(resolve(process.cwd(), modulePath))) {
      throw new ConfigError(`--jobs: no module at ${modulePath}`);
    }
    throw new ConfigError(`--jobs: could not load ${modulePath}: ${(error as Error).message.split("\n")[0]}`);
  }
  const jobs = loaded.default;
  const isDefinition = (value: unknown) =>
    typeof value === "object" && value !== null && typeof (value as AnyJobDefinition).kind === "string" && typeof (value as AnyJobDefinition).handler === "function";
  if (!Array.isArray(jobs) || jobs.length === 0 || !jobs.every(isDefinition)) {
    throw new ConfigError(`--jobs: ${modulePath} must default-export a non-empty array of defineJob(...) definitions`);
  }
  return jobs as AnyJobDefinition[];
}
