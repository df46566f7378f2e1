import { spawn } from "node:child_process";
import { expect, it } from "vitest";
import { REPO_ROOT, requireBuild } from "../helpers/child-process.js";
import { testDatabaseUrl } from "../helpers/database.js";

// conveyor-jobs/testing needs no vitest: the same helpers under `node --test`.
it("works under node's own test runner", async () => {
  requireBuild("src/testing/index.js");
  const child = spawn(process.execPath, ["--test", "--test-reporter=tap", "test/fixtures/testing-node-runner.mjs"], {
    cwd: REPO_ROOT,
    env: { ...process.env, DATABASE_URL: testDatabaseUrl() },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
  child.stderr.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
  const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
  expect(output).toMatch(/# pass 2\b/);
  expect(output).toMatch(/# fail 0\b/);
  expect(code, output).toBe(0);
});
