import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { MetricsRegistry } from "./metric-types.js";

/** Serve a registry at `GET /metrics` on its own port (the worker's; the API serves its own). */
export async function serveMetrics(registry: MetricsRegistry, port: number, host = "0.0.0.0"): Promise<{ server: Server; port: number }> {
  const server = createServer((request, response) => {
    if (request.method !== "GET" || request.url?.split("?")[0] !== "/metrics") {
      response.writeHead(404, { "content-type": "text/plain" }).end("not found\n");
      return;
    }
    registry.metrics().then(
      (text) => response.writeHead(200, { "content-type": registry.contentType }).end(text),
      (error: Error) => response.writeHead(500, { "content-type": "text/plain" }).end(`${error.message}\n`),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve());
  });
  return { server, port: (server.address() as AddressInfo).port };
}
