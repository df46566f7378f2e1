// Child process for the embedded PostgreSQL tests: starts (or joins) the
// server on a data directory, prints one JSON line, then behaves per mode.
// Usage: node embedded-child.mjs <mode> <dataDir> [port]
//   hold: stay alive until killed; no signal handler of its own
//   once: call stop() (a no-op when joined) and exit
//   exit: just return, so the process ends when its event loop is empty
// Through the package's own exports map, as an application would import it (resolves to dist/).
import { startEmbeddedPostgres } from "conveyor/embedded";

const [mode, dataDir, port] = process.argv.slice(2);
const report = (message) => process.stdout.write(`${JSON.stringify({ ...message, pid: process.pid })}\n`);
try {
  const server = await startEmbeddedPostgres({ dataDir, port: port ? Number(port) : undefined });
  report({ ok: true, owned: server.owned, port: server.port, connectionString: server.connectionString });
  if (mode === "hold") setInterval(() => {}, 60_000);
  if (mode === "once") await server.stop();
} catch (error) {
  report({ ok: false, name: error?.name, code: error?.code, message: String(error?.message ?? error) });
  process.exitCode = 1;
}
