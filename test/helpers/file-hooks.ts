/**
 * Runs in every test file before the file itself (vitest `setupFiles`).
 *
 * - Starts migrating a schema for the file's first `createTestConveyor`
 *   while an integration test file (under test/) is imported; one made
 *   ahead and not taken is dropped at the end.
 * - Fails the file when, after its own `afterAll` hooks, it left something
 *   open: a `createTestConveyor` client not cleaned up, a started worker not
 *   stopped, a pg pool not ended, a pg connection not closed, a child process
 *   still running. The error names each one and where it was created; they
 *   are then closed so the next file starts clean.
 */
import { relative, sep } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, expect, type RunnerTestSuite } from "vitest";
import { installResourceTracking, type OpenResource, openResources, runFileEndTasks, setCurrentFile } from "./open-resources.js";

const REPO_ROOT = fileURLToPath(new URL("../..", import.meta.url));

/** How long something being closed (a killed child, an ending pool) may take to report closed before it counts as left open. */
const CLOSE_WAIT_MS = 3_000;

// Files under test/ are the integration tests: they use the database, nearly
// all take a schema. Unit tests beside the code skip loading pg and the store.
const integration = relative(REPO_ROOT, expect.getState().testPath ?? "").startsWith(`test${sep}`);
await installResourceTracking({ pg: integration });
const schemas = integration ? await import("./test-schemas.js") : undefined;
schemas?.prepareSchemaAhead();

// vitest passes the suite second (the first argument is for fixtures); at the top level it is the file.
// biome-ignore lint/correctness/noEmptyPattern: vitest requires a destructuring pattern for the first argument
beforeAll(({}, suite) => {
  setCurrentFile((suite as RunnerTestSuite).file);
});

afterAll(async () => {
  await runFileEndTasks(); // e.g. drop the schema migrated ahead that no test took
  const left = await stillOpen();
  // Report each test client (its pool is its own), close them, then whatever else is open.
  const owners = left.filter((resource) => resource.owner);
  await closeAll(owners);
  const others = owners.length > 0 ? await stillOpen() : left.filter((resource) => !resource.owner);
  await closeAll(others);
  const leaked = [...owners, ...others];
  if (leaked.length > 0) {
    throw new Error(
      `this file left ${leaked.length} thing(s) open after its afterAll hooks (closed now):\n${leaked.map((resource) => `  - ${resource.describe()}`).join("\n")}`,
    );
  }
}, 30_000);

/** Open resources, after giving those being closed a moment to finish. */
async function stillOpen(): Promise<OpenResource[]> {
  const deadline = Date.now() + CLOSE_WAIT_MS;
  let open = openResources();
  while (open.length > 0 && Date.now() < deadline) {
    await sleep(50);
    open = openResources();
  }
  return open;
}

async function closeAll(resources: OpenResource[]): Promise<void> {
  await Promise.allSettled(resources.map((resource) => resource.close()));
}
