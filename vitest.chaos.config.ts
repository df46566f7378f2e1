import { defineConfig } from "vitest/config";

/**
 * The chaos suite (`npm run test:chaos`): real worker processes, a TCP fault
 * proxy and PostgreSQL restarts. Files run one at a time: the faults are
 * timed against leases of a few seconds, and a 2-core CI machine running
 * several scenarios at once would turn scheduling delays into lost leases.
 */
export default defineConfig({
  test: {
    include: ["test/chaos/**/*.test.ts"],
    globalSetup: ["test/helpers/global-setup.ts"],
    fileParallelism: false,
    testTimeout: 240_000,
    hookTimeout: 120_000,
    teardownTimeout: 60_000,
  },
});
