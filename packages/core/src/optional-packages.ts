import type { Conveyor } from "./conveyor.js";
import { ConfigError } from "./core/errors.js";

/**
 * The contract with the packages that the CLI and the test helpers load
 * only when they need them, so that `npm install conveyor-jobs` alone brings no HTTP
 * server and no PostgreSQL binaries. Each package checks at compile time
 * that its exports satisfy the interface here (`satisfies`), so the two
 * cannot drift.
 */

/** What the CLI uses of `conveyor-jobs-http`: `api` and `dev` serve the API and dashboard. */
export interface HttpPackage {
  /** Serve the API and dashboard of `conveyor` on `host`:`port` (0: a free port) until `close()`. */
  startApiServer(
    conveyor: Conveyor,
    options: { port: number; host: string; bodyLimit?: number; requestTimeoutMs?: number },
  ): Promise<{ url: string; close(): Promise<void> }>;
}

/** What the CLI and `conveyor-jobs/testing` use of `conveyor-jobs-embedded`: they run on it when DATABASE_URL is unset. */
export interface EmbeddedPackage {
  /** Start the server on `dataDir`, or join the one another process runs there (`owned` false; `stop()` then does nothing). */
  startEmbeddedPostgres(options: {
    dataDir: string;
    logger?: (line: string) => void;
  }): Promise<{ connectionString: string; owned: boolean; stop(): Promise<void> }>;
}

interface OptionalPackages {
  "conveyor-jobs-http": HttpPackage;
  "conveyor-jobs-embedded": EmbeddedPackage;
}

/**
 * Import an optional package, or throw a ConfigError of `missing` (which
 * says what needs the package) and how to install it. An error inside the
 * package (or a module it imports that is missing) is not this case and
 * passes through unchanged.
 */
export async function loadOptionalPackage<Name extends keyof OptionalPackages>(name: Name, missing: string): Promise<OptionalPackages[Name]> {
  // A specifier in a variable: the core package compiles without the optional ones.
  const specifier: string = name;
  try {
    return (await import(specifier)) as OptionalPackages[Name];
  } catch (error) {
    const { code, message } = error as NodeJS.ErrnoException;
    if (code === "ERR_MODULE_NOT_FOUND" && message.includes(`'${name}'`) && !message.includes(`/${name}/`)) {
      throw new ConfigError(`${missing}: npm install ${name}`);
    }
    throw error;
  }
}
