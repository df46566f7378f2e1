import { fileURLToPath } from "node:url";
import { configDefaults, defineConfig } from "vitest/config";

const source = (path: string): string => fileURLToPath(new URL(path, import.meta.url));

export default defineConfig({
  resolve: {
    // The examples, the API package and the embedded one import the core
    // package by its name. In tests every package name means its source, so
    // all of them share the module instances the tests import (a class from
    // dist would fail `instanceof`). test/tsconfig.json maps the same names.
    alias: [
      { find: /^conveyor-jobs$/, replacement: source("./packages/core/src/index.ts") },
      { find: /^conveyor-jobs\/testing$/, replacement: source("./packages/core/src/testing/index.ts") },
      { find: /^conveyor-jobs\/server$/, replacement: source("./packages/core/src/server.ts") },
      { find: /^conveyor-jobs\/browser$/, replacement: source("./packages/core/src/browser.ts") },
      { find: /^conveyor-jobs-http$/, replacement: source("./packages/http/src/index.ts") },
      { find: /^conveyor-jobs-embedded$/, replacement: source("./packages/embedded/src/embedded-postgres.ts") },
    ],
  },
  test: {
    // examples/: the example jobs' own tests, written with conveyor-jobs/testing as a user's would be.
    include: ["test/**/*.test.ts", "packages/*/src/**/*.test.ts", "packages/core/examples/**/*.test.ts"],
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
    // Three files at once whatever the cores: a file spends most of its time
    // waiting on the database and the processes it starts, so on 2 cores
    // three run in about 70% of the time one at a time takes.
    maxWorkers: 3,
    hookTimeout: 60_000,
    teardownTimeout: 30_000,
  },
});
