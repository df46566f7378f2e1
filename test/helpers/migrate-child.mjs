// Child process for the concurrent-migration test: connects, says "ready",
// waits for "go" on stdin (so all children migrate at the same moment), runs
// the built migrate(), prints the result as JSON and exits.
// Usage: node migrate-child.mjs <databaseUrl> <schema>
import { createInterface } from "node:readline";
import { createPool } from "../../packages/core/dist/src/store/db.js";
import { migrate } from "../../packages/core/dist/src/store/migrate.js";

const [databaseUrl, schema] = process.argv.slice(2);
const pool = createPool({ connectionString: databaseUrl, max: 1, applicationName: "conveyor-migrate-test" });
try {
  await pool.query("SELECT 1"); // connected before the start line
  process.stdout.write(`${JSON.stringify({ ready: true, pid: process.pid })}\n`);
  const lines = createInterface({ input: process.stdin });
  for await (const line of lines) if (line.trim() === "go") break;
  lines.close();
  process.stdin.destroy(); // let the process exit once done
  const result = await migrate(pool, schema);
  process.stdout.write(`${JSON.stringify({ ok: true, applied: result.applied, version: result.version })}\n`);
} catch (error) {
  process.stdout.write(`${JSON.stringify({ ok: false, name: error?.name, message: String(error?.message ?? error) })}\n`);
  process.exitCode = 1;
} finally {
  await pool.end();
}
