import { existsSync } from "node:fs";
import { isAbsolute, relative, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import type { AnyJobDefinition } from "../core/define-job.js";
import { ConfigError } from "../core/errors.js";
import { EXAMPLE_JOBS } from "./examples.js";

/**
 * Load a jobs module: its default export must be an array of `defineJob`
 * definitions (the same module for workers and the API). When it cannot be
 * loaded, the error says why in one line: no module at the path given, or
 * which module it (or a module it imports) could not find, and from where.
 */
export async function loadJobs(modulePath: string): Promise<AnyJobDefinition[]> {
  const path = resolve(process.cwd(), modulePath);
  let loaded: { default?: unknown };
  try {
    loaded = (await import(pathToFileURL(path).href)) as { default?: unknown };
  } catch (error) {
    if (!existsSync(path)) throw new ConfigError(`--jobs: no module at ${modulePath}`);
    const missing = missingImport(error);
    // zod is an optional peer of the package; only the bundled examples import it.
    if (missing?.startsWith("package zod not found") && path === EXAMPLE_JOBS) {
      throw new ConfigError("the bundled example jobs (the default --jobs) use zod, which is not installed: npm install zod");
    }
    if (missing) throw new ConfigError(`--jobs: could not load ${modulePath}: ${missing}`);
    throw new ConfigError(`--jobs: could not load ${modulePath}: ${firstLine(error)}`);
  }
  const jobs = loaded.default;
  const isDefinition = (value: unknown) =>
    typeof value === "object" && value !== null && typeof (value as AnyJobDefinition).kind === "string" && typeof (value as AnyJobDefinition).handler === "function";
  if (!Array.isArray(jobs) || jobs.length === 0 || !jobs.every(isDefinition)) {
    throw new ConfigError(`--jobs: ${modulePath} must default-export a non-empty array of defineJob(...) definitions`);
  }
  return jobs as AnyJobDefinition[];
}

/**
 * "module ./lib/mail.js not found, imported from ./jobs.js" for an import
 * Node could not resolve (ESM's ERR_MODULE_NOT_FOUND, CommonJS's
 * MODULE_NOT_FOUND); undefined for any other error.
 */
function missingImport(error: unknown): string | undefined {
  const { code, requireStack } = error as { code?: unknown; requireStack?: unknown };
  const message = firstLine(error);
  if (code === "ERR_MODULE_NOT_FOUND") {
    const match = /^Cannot find (module|package) '(.+)' imported from (.+)$/.exec(message);
    if (match) return `${match[1]} ${shownPath(match[2]!)} not found, imported from ${shownPath(match[3]!)}`;
  }
  if (code === "MODULE_NOT_FOUND" && Array.isArray(requireStack) && typeof requireStack[0] === "string") {
    const match = /^Cannot find module '(.+)'$/.exec(message);
    if (match) return `module ${shownPath(match[1]!)} not found, required from ${shownPath(requireStack[0])}`;
  }
  return undefined;
}

/** A file path (or file URL) under the working directory as ./relative, any other path or specifier as it is. */
function shownPath(specifier: string): string {
  const path = specifier.startsWith("file:") ? fileURLToPath(specifier) : specifier;
  if (!isAbsolute(path)) return path;
  const fromHere = relative(process.cwd(), path);
  return fromHere.startsWith("..") || isAbsolute(fromHere) ? path : `./${fromHere}`;
}

function firstLine(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split("\n")[0]!;
}
