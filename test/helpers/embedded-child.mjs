// Child process for the embedded PostgreSQL tests: starts (or joins) the
// server on a data directory, prints one JSON line, then behaves per mode.
// Usage: node embedded-child.mjs <mode> <dataDir> [port]
//   hold:     stay alive until killed; no signal handler of its own
//   graceful: stay alive; on SIGTERM, query the server (it must still be up
//             while the application shuts down), report, then process.exit(0)
//   once:     call stop() (a no-op when joined) and exit
//   exit:     just return, so the process ends when its event loop is empty
import pg from "pg";
// Through the package's own exports map, as an application would import it (resolves to dist/).
import { startEmbeddedPostgres } from "conveyor-jobs-embedded";

const [mode, dataDir, port] = process.argv.slice(2);
const report = (message) => process.stdout.write(`${JSON.stringify({ ...message, pid: process.pid })}\n`);
try {
  const server = await startEmbeddedPostgres({ dataDir, port: port ? Number(port) : undefined });
  if (mode === "graceful") {
    process.on("SIGTERM", async () => {
      const client = new pg.Client({ connectionString: server.connectionString });
      await client.connect();
      const { rows } = await client.query("SELECT 42 AS answer");
      await client.end();
      report({ shutdown: true, answer: rows[0].answer });
      process.exit(0);
    });
  }
  report({ ok: true, owned: server.owned, port: server.port, connectionString: server.connectionString });
  if (mode === "hold" || mode === "graceful") setInterval(() => {}, 60_000);
  if (mode === "once") await server.stop();
} catch (error) {
  report({ ok: false, name: error?.name, code: error?.code, message: String(error?.message ?? error) });
  process.exitCode = 1;
}
