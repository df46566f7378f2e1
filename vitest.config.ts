import { configDefaults, defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts", "src/**/*.test.ts"],
    // The chaos suite has its own config and command (`npm run test:chaos`).
    exclude: [...configDefaults.exclude, "test/chaos/**"],
    // Starts embedded PostgreSQL (or checks DATABASE_URL) once for the whole run.
    globalSetup: ["test/helpers/global-setup.ts"],
    // Files run in parallel, each in its own schema; tests that start real
    // processes or insert 100,000 rows need far more than the 5 s default.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    teardownTimeout: 30_000,
  },
});
