import { fileURLToPath } from "node:url";
import { configDefaults, defineConfig } from "vitest/config";

const source = (path: string): string => fileURLToPath(new URL(path, import.meta.url));

export default defineConfig({
  resolve: {
    // The examples import the package by its name. In tests that name means
    // the source, so an example's definitions and errors are the same module
    // instances the tests import (a class from dist would fail `instanceof`).
    alias: [
      { find: /^conveyor-jobs$/, replacement: source("./src/index.ts") },
      { find: /^conveyor-jobs\/http$/, replacement: source("./src/http/index.ts") },
      { find: /^conveyor-jobs\/embedded$/, replacement: source("./src/embedded/embedded-postgres.ts") },
      { find: /^conveyor-jobs\/testing$/, replacement: source("./src/testing/index.ts") },
    ],
  },
  test: {
    // examples/: the example jobs' own tests, written with conveyor-jobs/testing as a user's would be.
    include: ["test/**/*.test.ts", "src/**/*.test.ts", "examples/**/*.test.ts"],
    // The chaos suite has its own config and command (`npm run test:chaos`).
    exclude: [...configDefaults.exclude, "test/chaos/**"],
    // Starts embedded PostgreSQL (or checks DATABASE_URL) once for the whole run.
    globalSetup: ["test/helpers/global-setup.ts"],
    // In every file: fails it if it leaves a worker, pool, connection or
    // child process open, and migrates its first schema while it loads.
    setupFiles: ["test/helpers/file-hooks.ts"],
    // Files run in parallel, each in its own schemas; tests that start real
    // processes or insert 100,000 rows need far more than the 5 s default.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    teardownTimeout: 30_000,
  },
});
