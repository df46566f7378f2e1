import { createServer } from "node:net";

/**
 * A TCP port on 127.0.0.1 that nothing listens on right now, chosen by the
 * kernel. Another process can take it before PostgreSQL binds it; the caller
 * retries with a new port when that happens.
 */
export function findFreePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => (port > 0 ? resolve(port) : reject(new Error("the kernel gave no port"))));
    });
  });
}
